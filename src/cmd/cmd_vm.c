/* `sandbox-libkrun vm run`: boot a VM, run one command in it with this
 * process's stdin/stdout/stderr, exit with its status. */
#include "cmd/cmd_vm.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "image/image_lookup.h"
#include "image/image_store.h"
#include "proto/proto.h"
#include "vm/disk.h"
#include "vm/qemu_cmdline.h"
#include "vm/share_arg.h"
#include "vm/virtiofs.h"
#include "vm/vm.h"

#define EXIT_CLI_FAILURE 125 /* our own failure, as `docker run` reports it */
#define READY_TIMEOUT_MS 120000
#define STOP_TIMEOUT_MS 3000

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sandbox-libkrun vm run [--cpus N] [--memory MiB] [--accel auto|kvm|tcg]\n"
		"                              [--tcg-cache-mb MiB] [--scratch-mb MiB] [--jail auto|required|off]\n"
		"                              [--data-disk FILE] [--console-log FILE]\n"
		"                              [--share HOST:GUEST[:ro|:rw]]...\n"
		"                              (--rootfs DIR|IMAGE.erofs | --image NAME) [-v] [--boot-log]\n"
		"                              [--cold] [--parked]\n"
		"                              [--warm-up ARG]...\n"
		"                              -- CMD [ARGS...]\n\n"
		"Boots a microVM with the given root filesystem, runs CMD in it with this\n"
		"process's stdin, stdout and stderr, and exits with CMD's exit status\n"
		"(125 when the VM itself fails).\n\n"
		"  --cpus N        virtual CPUs (default 1, at most 16)\n"
		"  --memory MiB    guest memory (default 512)\n"
		"  --accel A       auto (KVM where usable, else TCG), kvm or tcg\n"
		"  --tcg-cache-mb MiB  TCG's translation cache (default 64, at most 2048)\n"
		"  --scratch-mb MiB    the writable scratch disk (default 2048)\n"
		"  --data-disk FILE    a persistent ext4 disk in place of the scratch disk,\n"
		"                  kept after the VM (created with --scratch-mb's size\n"
		"                  when missing); implies --cold\n"
		"  --console-log FILE  append the guest console to FILE (kept)\n"
		"  --share HOST:GUEST[:ro|:rw]  share the host directory HOST at GUEST in\n"
		"                  the VM with virtio-fs (rw by default; at most 4);\n"
		"                  implies --cold\n"
		"  --rootfs PATH   a root filesystem directory or an erofs image\n"
		"  --image NAME    a cached image (`image ls`): a catalog name, a reference\n"
		"                  or a digest (sha256:<12 hex> is enough)\n"
		"  --jail MODE     confine QEMU (docs/security.md): auto (default: where\n"
		"                  the host allows it), required or off\n"
		"  -v, --verbose   show the boot phases and their timings on stderr\n"
		"  --boot-log      kernel messages on stderr, each console line prefixed\n"
		"                  with its arrival in ms since the start\n"
		"  --cold          boot the kernel: no snapshot restored or saved\n"
		"  --parked        start as a warm pool's VM does (warmed up, then waiting\n"
		"                  for its CONFIG), then configure it; -v times the\n"
		"                  command from the CONFIG\n"
		"  --warm-up ARG   with --parked: one more argument of the command the\n"
		"                  warm-up runs after `true` (as a pool's does the image's\n"
		"                  interpreter); implies --parked\n"
		"  -h, --help      this text\n");
}

/* One line naming the mistake, not the whole help; exit status 2. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("sandbox-libkrun vm run: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("; see `sandbox-libkrun vm run --help`\n", stderr);
	return 2;
}

/* The erofs file of a cached image (presets' names work, custom_images'
 * do not: no configuration here). */
static char *cached_image(const char *name, sbx_error_t *err)
{
	struct sbx_image_config cfg;
	sbx_image_config_init(&cfg);
	char *root = sbx_image_root(err);
	struct sbx_index idx = { 0 };
	if (root == NULL || sbx_index_read(root, &idx, err) < 0) {
		free(root);
		return NULL;
	}
	const struct sbx_index_entry *e = sbx_image_lookup(&idx, &cfg, name, err);
	char *path = e != NULL ? sbx_image_path(root, e->digest, err) : NULL;
	if (path != NULL && access(path, R_OK) < 0) {
		sbx_error_errno(err, errno, "image '%s': %s", name, path);
		free(path);
		path = NULL;
	}
	sbx_index_free(&idx);
	free(root);
	return path;
}

static int parse_uint(const char *s, unsigned max, unsigned *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || v == 0 || v > max)
		return -1;
	*out = (unsigned)v;
	return 0;
}

struct pump {
	struct sbx_vm_proc *proc;
	atomic_bool done;
};

/* Forwards stdin to the process until EOF, or until the process ended. */
static void *stdin_pump(void *arg)
{
	struct pump *pu = arg;
	char buf[65536];
	sbx_error_t err = NULL;
	while (!atomic_load(&pu->done)) {
		struct pollfd p = { .fd = 0, .events = POLLIN };
		int r = poll(&p, 1, 100);
		if (r < 0 && errno != EINTR)
			break;
		if (r <= 0)
			continue;
		ssize_t n = read(0, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (size_t off = 0; off < (size_t)n;) {
			ssize_t w = sbx_vm_proc_write(pu->proc, buf + off, (size_t)n - off, -1, &err);
			if (w < 0)
				goto out;
			off += (size_t)w;
		}
	}
out:
	sbx_error_free(&err);
	if (sbx_vm_proc_close_stdin(pu->proc, &err) < 0)
		sbx_error_free(&err);
	return NULL;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Forward stdin when it is not a terminal (a pipe or file), or when a
 * terminal already has input waiting. */
static bool want_stdin(void)
{
	if (!isatty(0))
		return true;
	struct pollfd p = { .fd = 0, .events = POLLIN };
	return poll(&p, 1, 0) > 0;
}

static int run_command(struct sbx_vm *vm, char **cmd, bool verbose, int64_t t0)
{
	sbx_error_t err = NULL;
	bool with_stdin = want_stdin();
	struct sbx_vm_proc *proc = sbx_vm_spawn(vm, cmd, NULL, NULL, with_stdin, &err);
	if (proc == NULL) {
		fprintf(stderr, "sandbox-libkrun vm run: %s\n", sbx_error_msg(err));
		sbx_error_free(&err);
		return EXIT_CLI_FAILURE;
	}
	struct pump pu = { .proc = proc };
	pthread_t th;
	bool pumping = with_stdin && pthread_create(&th, NULL, stdin_pump, &pu) == 0;
	if (with_stdin && !pumping)
		sbx_vm_proc_close_stdin(proc, &err);
	char buf[65536];
	bool first = true, out_ok = true;
	for (;;) {
		int fd;
		ssize_t n = sbx_vm_proc_read(proc, &fd, buf, sizeof(buf), -1, &err);
		if (n <= 0)
			break;
		if (first && verbose)
			fprintf(stderr, "vm: first output at %lld ms\n", (long long)(sbx_now_ms() - t0));
		first = false;
		/* A closed stdout must not stop the command: keep draining. */
		if (out_ok && write_all(fd, buf, (size_t)n) < 0)
			out_ok = false;
	}
	int status = EXIT_CLI_FAILURE;
	if (err == NULL && sbx_vm_proc_wait(proc, -1, &status, &err) < 0)
		status = EXIT_CLI_FAILURE;
	if (err != NULL) {
		fprintf(stderr, "sandbox-libkrun vm run: %s\n", sbx_error_msg(err));
		sbx_error_free(&err);
	}
	atomic_store(&pu.done, true);
	if (pumping)
		pthread_join(th, NULL);
	sbx_vm_proc_free(proc);
	if (verbose)
		fprintf(stderr, "vm: exit status %d at %lld ms\n", status, (long long)(sbx_now_ms() - t0));
	return status;
}

/* --parked: the VM waits warmed up, as in a warm pool; CONFIG now, and the
 * command's times count from it (a pool's create -> first exec). */
static int configure_parked(struct sbx_vm *vm, char **cmd, bool verbose)
{
	char *no_env[] = { NULL };
	sbx_error_t err = NULL;
	int64_t t = sbx_now_ms();
	if (sbx_vm_configure(vm, no_env, "", t + READY_TIMEOUT_MS, &err) < 0) {
		fprintf(stderr, "sandbox-libkrun vm run: %s\n", sbx_error_msg(err));
		sbx_error_free(&err);
		return EXIT_CLI_FAILURE;
	}
	if (verbose)
		fprintf(stderr, "vm: parked after a warm-up of %lld ms; CONFIG -> ready %lld ms\n",
			(long long)sbx_vm_timings(vm)->warm_up, (long long)(sbx_now_ms() - t));
	return run_command(vm, cmd, verbose, t);
}

static int vm_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "cpus", required_argument, NULL, 'c' },   { "memory", required_argument, NULL, 'm' },
		{ "accel", required_argument, NULL, 'a' },  { "rootfs", required_argument, NULL, 'r' },
		{ "verbose", no_argument, NULL, 'v' },      { "help", no_argument, NULL, 'h' },
		{ "boot-log", no_argument, NULL, 'b' },     { "cold", no_argument, NULL, 'C' },
		{ "tcg-cache-mb", required_argument, NULL, 't' }, { "scratch-mb", required_argument, NULL, 's' },
		{ "jail", required_argument, NULL, 'j' }, { "data-disk", required_argument, NULL, 'D' },
		{ "console-log", required_argument, NULL, 'L' }, { "share", required_argument, NULL, 'S' },
		{ "parked", no_argument, NULL, 'P' }, { "warm-up", required_argument, NULL, 'W' },
		{ "image", required_argument, NULL, 'I' },
		{ NULL, 0, NULL, 0 },
	};
	struct sbx_vm_options opt = { .cpus = 1, .memory_mib = 512 };
	struct sbx_vm_share shares[SBX_VM_MAX_SHARES];
	char *warm_up[PROTO_MAX_WARM_UP_ARGS + 1] = { NULL };
	size_t n_warm_up = 0;
	enum sbx_jail_mode jail_mode = SBX_JAIL_AUTO;
	bool verbose = false;
	sbx_error_t err = NULL;
	int c;
	const char *image_name = NULL;
	optind = 1;
	opterr = 0; /* our own one-line messages */
	while ((c = getopt_long(argc, argv, "+:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (parse_uint(optarg, 16, &opt.cpus) < 0) {
				fprintf(stderr, "sandbox-libkrun vm run: --cpus must be 1..16\n");
				return 2;
			}
			break;
		case 'm':
			if (parse_uint(optarg, 65536, &opt.memory_mib) < 0 || opt.memory_mib < 64) {
				fprintf(stderr, "sandbox-libkrun vm run: --memory must be 64..65536 (MiB)\n");
				return 2;
			}
			break;
		case 't':
			if (parse_uint(optarg, SBX_VM_TCG_CACHE_MAX_MIB, &opt.tcg_cache_mib) < 0) {
				fprintf(stderr, "sandbox-libkrun vm run: --tcg-cache-mb must be 1..%d (MiB)\n",
					SBX_VM_TCG_CACHE_MAX_MIB);
				return 2;
			}
			break;
		case 's':
			if (parse_uint(optarg, SBX_SCRATCH_MAX_MIB, &opt.scratch_mib) < 0 ||
			    opt.scratch_mib < SBX_SCRATCH_MIN_MIB) {
				fprintf(stderr, "sandbox-libkrun vm run: --scratch-mb must be %d..%u (MiB)\n", SBX_SCRATCH_MIN_MIB,
					SBX_SCRATCH_MAX_MIB);
				return 2;
			}
			break;
		case 'a':
			if (sbx_accel_parse(optarg, &opt.accel, &err) < 0) {
				fprintf(stderr, "sandbox-libkrun vm run: %s\n", sbx_error_msg(err));
				sbx_error_free(&err);
				return 2;
			}
			break;
		case 'r':
			opt.image = optarg;
			break;
		case 'I':
			image_name = optarg;
			break;
		case 'D':
			opt.data_disk = optarg;
			break;
		case 'L':
			opt.console_log = optarg;
			break;
		case 'S':
			if (opt.n_shares == SBX_VM_MAX_SHARES) {
				fprintf(stderr, "sandbox-libkrun vm run: at most %d --share\n", SBX_VM_MAX_SHARES);
				return 2;
			}
			if (share_arg_parse(optarg, &shares[opt.n_shares], &err) < 0) {
				fprintf(stderr, "sandbox-libkrun vm run: %s\n", sbx_error_msg(err));
				sbx_error_free(&err);
				return 2;
			}
			opt.shares = shares;
			opt.n_shares++;
			break;
		case 'j':
			if (sbx_jail_mode_parse(optarg, &jail_mode, &err) < 0) {
				fprintf(stderr, "sandbox-libkrun vm run: --%s\n", sbx_error_msg(err));
				sbx_error_free(&err);
				return 2;
			}
			break;
		case 'v':
			verbose = true;
			break;
		case 'b':
			opt.boot_log = true;
			break;
		case 'C':
			opt.cold_boot = true;
			break;
		case 'P':
			opt.park = true;
			break;
		case 'W':
			if (n_warm_up == PROTO_MAX_WARM_UP_ARGS || strlen(optarg) > PROTO_MAX_WARM_UP_ARG) {
				fprintf(stderr, "sandbox-libkrun vm run: at most %u --warm-up of at most %u bytes\n",
					PROTO_MAX_WARM_UP_ARGS, PROTO_MAX_WARM_UP_ARG);
				return 2;
			}
			warm_up[n_warm_up++] = optarg;
			opt.warm_up = warm_up;
			opt.park = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case ':':
			return usage_error("%s needs a value", argv[optind - 1]);
		default:
			/* optopt: a short option (its argument may hold more). */
			return optopt != 0 ? usage_error("unknown option '-%c'", optopt)
					   : usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (opt.image != NULL && image_name != NULL)
		return usage_error("--rootfs and --image both give the root filesystem: use one");
	if (opt.image == NULL && image_name == NULL)
		return usage_error("--rootfs or --image is required");
	if (optind >= argc)
		return usage_error("a command is required after --");
	cleanup_free char *image_path = image_name != NULL ? cached_image(image_name, &err) : NULL;
	if (image_name != NULL && image_path == NULL) {
		usage_error("--image: %s", sbx_error_msg(err));
		sbx_error_free(&err);
		return 2;
	}
	if (image_path != NULL)
		opt.image = image_path;
	if (!verbose && sbx_log_get_level() < SBX_LOG_ERROR)
		sbx_log_set_level(SBX_LOG_ERROR);
	signal(SIGPIPE, SIG_IGN);
	int64_t t0 = sbx_now_ms();
	if ((opt.jail = sbx_jail_host_new(jail_mode, SBX_JAIL_UID_BASE_DEFAULT, &err)) == NULL) {
		fprintf(stderr, "sandbox-libkrun vm run: %s\n", sbx_error_msg(err));
		sbx_error_free(&err);
		return 2;
	}
	sbx_jail_remove_leftovers(opt.jail);
	if (opt.data_disk != NULL && access(opt.data_disk, F_OK) < 0 && errno == ENOENT &&
	    disk_scratch_create(opt.data_disk,
				(uint64_t)(opt.scratch_mib ? opt.scratch_mib : SBX_SCRATCH_DEFAULT_MIB) << 20, &err) < 0) {
		fprintf(stderr, "sandbox-libkrun vm run: %s\n", sbx_error_msg(err));
		sbx_error_free(&err);
		sbx_jail_host_free(opt.jail);
		return EXIT_CLI_FAILURE;
	}
	struct sbx_vm *vm = sbx_vm_start(&opt, &err);
	if (vm == NULL) {
		fprintf(stderr, "sandbox-libkrun vm run: %s\n", sbx_error_msg(err));
		sbx_error_free(&err);
		sbx_jail_host_free(opt.jail);
		return EXIT_CLI_FAILURE;
	}
	int status;
	if (sbx_vm_wait_ready(vm, sbx_now_ms() + READY_TIMEOUT_MS, &err) < 0) {
		fprintf(stderr, "sandbox-libkrun vm run: %s\n", sbx_error_msg(err));
		sbx_error_free(&err);
		status = EXIT_CLI_FAILURE;
	} else {
		if (verbose) {
			const struct sbx_vm_timings *t = sbx_vm_timings(vm);
			fprintf(stderr,
				"vm: kernel %lld ms, disks %lld ms, qemu started %lld ms, guest hello %lld ms, "
				"state loaded %lld ms, ready %lld ms%s\n",
				(long long)t->kernel, (long long)t->disks, (long long)t->qemu, (long long)t->hello,
				(long long)t->loaded, (long long)t->ready, t->restored ? " (restored from a snapshot)" : "");
		}
		status = opt.park ? configure_parked(vm, argv + optind, verbose)
				  : run_command(vm, argv + optind, verbose, t0);
	}
	int64_t t_stop = sbx_now_ms();
	int qemu_status = sbx_vm_stop(vm, sbx_now_ms() + STOP_TIMEOUT_MS);
	if (verbose)
		fprintf(stderr, "vm: stopped in %lld ms (qemu status %d)\n", (long long)(sbx_now_ms() - t_stop),
			qemu_status);
	sbx_jail_host_free(opt.jail);
	return status;
}

int sbx_cmd_vm(int argc, char **argv)
{
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		usage(stdout);
		return 0;
	}
	if (argc < 2 || strcmp(argv[1], "run") != 0) {
		fprintf(stderr, "sandbox-libkrun vm: %s; see `sandbox-libkrun vm --help`\n",
			argc < 2 ? "a subcommand is required (run)" : "unknown subcommand (run is the one)");
		return 2;
	}
	return vm_run(argc - 1, argv + 1);
}
