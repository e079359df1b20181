#include "vm/vm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/state_dir.h"
#include "vm/channel.h"
#include "vm/console.h"
#include "vm/disk.h"
#include "vm/keeper.h"
#include "vm/kernel.h"
#include "vm/qemu_cmdline.h"
#include "vm/tsc.h"
#include "vm/vm_chan.h"

#define QEMU_FIX "install qemu-system-x86 (scripts/setup) or set SANDBOX_QEMU"
#define BOOT_DISK_FIX "build the boot_disk target (ninja -C build) or set SANDBOX_BOOT_DISK"
#define SHUTDOWN_GRACE_MS 3000
#define QEMU_LOG_TAIL 1024

struct sbx_vm {
	char *dir;
	char *files[4]; /* scratch, console log, qemu log, built image (or NULL) */
	struct keeper keeper;
	struct console console;
	struct chan *chan;
	pthread_mutex_t lock; /* keeper state */
	int64_t t0;
	struct sbx_vm_timings t;
	char *hostname;
	char **env;
	char *user;
	uint64_t memory_bytes, nofile;
};

struct sbx_vm_proc {
	struct chan_stream *s;
};

enum { F_SCRATCH, F_CONSOLE, F_QEMU_LOG, F_IMAGE };

struct chan *sbx_vm_chan(struct sbx_vm *vm)
{
	return vm->chan;
}

int64_t sbx_vm_now_ms(void)
{
	return chan_now_ms();
}

static char *path_join(const char *a, const char *b)
{
	char *s = NULL;
	return asprintf(&s, "%s/%s", a, b) < 0 ? NULL : s;
}

static char *find_qemu(sbx_error_t *err)
{
	const char *env = getenv("SANDBOX_QEMU");
	if (env != NULL && env[0] != '\0') {
		if (env[0] == '/' && access(env, X_OK) == 0)
			return strdup(env);
		sbx_error_scode(err, "S300", "SANDBOX_QEMU=%s is not an executable absolute path", env);
		return NULL;
	}
	const char *path = getenv("PATH");
	cleanup_free char *copy = strdup(path != NULL ? path : "/usr/local/bin:/usr/bin:/bin");
	char *save = NULL;
	for (char *d = copy != NULL ? strtok_r(copy, ":", &save) : NULL; d != NULL; d = strtok_r(NULL, ":", &save)) {
		if (d[0] != '/')
			continue;
		char *p = path_join(d, "qemu-system-x86_64");
		if (p != NULL && access(p, X_OK) == 0)
			return p;
		free(p);
	}
	sbx_error_scode(err, "S300", "qemu-system-x86_64 not found in PATH; %s", QEMU_FIX);
	return NULL;
}

/* The boot disk is a build product: look beside the executable and in its
 * parent directories (test programs live deeper in the build tree). */
static char *find_boot_disk(const char *explicit_path, sbx_error_t *err)
{
	const char *p = explicit_path != NULL ? explicit_path : getenv("SANDBOX_BOOT_DISK");
	if (p != NULL && p[0] != '\0') {
		if (access(p, R_OK) == 0)
			return strdup(p);
		sbx_error_scode(err, "S300", "boot disk %s: %s; %s", p, strerror(errno), BOOT_DISK_FIX);
		return NULL;
	}
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		for (int up = 0; up < 4; up++) {
			char *slash = strrchr(exe, '/');
			if (slash == NULL)
				break;
			*slash = '\0';
			char *cand = path_join(exe[0] != '\0' ? exe : "/", "src/guest/boot.erofs");
			if (cand != NULL && access(cand, R_OK) == 0)
				return cand;
			free(cand);
		}
	}
	sbx_error_scode(err, "S300", "boot disk src/guest/boot.erofs not found next to the executable; %s",
			BOOT_DISK_FIX);
	return NULL;
}

static char *make_vm_dir(sbx_error_t *err)
{
	cleanup_free char *vms = sbx_state_subdir("vms", err);
	if (vms == NULL)
		return NULL;
	static atomic_uint counter;
	uint32_t rnd = 0;
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = (uint32_t)time(NULL);
	char *dir = NULL;
	if (asprintf(&dir, "%s/%ld-%u-%08x", vms, (long)getpid(), atomic_fetch_add(&counter, 1), rnd) < 0) {
		sbx_error_errno(err, ENOMEM, "vm directory");
		return NULL;
	}
	if (mkdir(dir, 0700) < 0) {
		sbx_error_errno(err, errno, "mkdir %s", dir);
		free(dir);
		return NULL;
	}
	return dir;
}

static char **strv_dup(char *const *v)
{
	size_t n = 0;
	while (v != NULL && v[n] != NULL)
		n++;
	char **out = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; out != NULL && i < n; i++) {
		if ((out[i] = strdup(v[i])) == NULL) {
			sbx_strv_free(out);
			return NULL;
		}
	}
	return out;
}

static void vm_free(struct sbx_vm *vm)
{
	for (size_t i = 0; i < sizeof(vm->files) / sizeof(vm->files[0]); i++)
		free(vm->files[i]);
	free(vm->dir);
	free(vm->hostname);
	sbx_strv_free(vm->env);
	free(vm->user);
	console_destroy(&vm->console);
	pthread_mutex_destroy(&vm->lock);
	free(vm);
}

/* Before the keeper owns them: remove what start created so far. */
static void remove_files(struct sbx_vm *vm)
{
	for (size_t i = 0; i < sizeof(vm->files) / sizeof(vm->files[0]); i++) {
		if (vm->files[i] != NULL)
			unlink(vm->files[i]);
	}
	if (vm->dir != NULL)
		rmdir(vm->dir);
}

static int prepare(struct sbx_vm *vm, const struct sbx_vm_options *opt, char **image, sbx_error_t *err)
{
	if ((vm->dir = make_vm_dir(err)) == NULL)
		return -1;
	vm->files[F_SCRATCH] = path_join(vm->dir, "scratch.ext4");
	vm->files[F_CONSOLE] = path_join(vm->dir, "console.log");
	vm->files[F_QEMU_LOG] = path_join(vm->dir, "qemu.log");
	if (vm->files[F_SCRATCH] == NULL || vm->files[F_CONSOLE] == NULL || vm->files[F_QEMU_LOG] == NULL)
		return sbx_error_errno(err, ENOMEM, "vm paths");
	struct stat st;
	if (opt->image == NULL || stat(opt->image, &st) < 0)
		return sbx_error_scode(err, "S300", "image %s: %s", opt->image ? opt->image : "(none)",
				       opt->image ? strerror(errno) : "no image given");
	if (S_ISDIR(st.st_mode)) {
		if ((vm->files[F_IMAGE] = path_join(vm->dir, "image.erofs")) == NULL)
			return sbx_error_errno(err, ENOMEM, "vm paths");
		if (disk_erofs_from_dir(opt->image, vm->files[F_IMAGE], err) < 0)
			return -1;
		*image = strdup(vm->files[F_IMAGE]);
	} else if (S_ISREG(st.st_mode)) {
		*image = strdup(opt->image);
	} else {
		return sbx_error_scode(err, "S300", "image %s is neither a file nor a directory", opt->image);
	}
	if (*image == NULL)
		return sbx_error_errno(err, ENOMEM, "vm paths");
	return disk_scratch_create(vm->files[F_SCRATCH], SBX_SCRATCH_SIZE, err);
}

static int launch(struct sbx_vm *vm, const struct sbx_vm_options *opt, const char *qemu, const char *kernel,
		  const char *boot, const char *image, enum sbx_accel accel, sbx_error_t *err)
{
	int con[2], ctl[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, con) < 0)
		return sbx_error_errno(err, errno, "socketpair");
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) < 0) {
		int e = errno;
		close(con[0]);
		close(con[1]);
		return sbx_error_errno(err, e, "socketpair");
	}
	struct qemu_config qc = {
		.qemu = qemu, .kernel = kernel, .boot_disk = boot, .image = image,
		.scratch = vm->files[F_SCRATCH], .cpus = opt->cpus ? opt->cpus : 1,
		.memory_mib = opt->memory_mib ? opt->memory_mib : 512, .accel = accel,
		.console_fd = KEEPER_QEMU_FD_BASE, .control_fd = KEEPER_QEMU_FD_BASE + 1,
		.tsc_khz = accel == SBX_ACCEL_TCG ? sbx_host_tsc_khz() : 0, .boot_log = opt->boot_log,
	};
	char **argv = qemu_cmdline(&qc, err);
	int rc = -1;
	if (argv != NULL) {
		const int fds[2] = { con[1], ctl[1] };
		const char *files[4];
		int nfiles = 0;
		for (size_t i = 0; i < 4; i++) {
			if (vm->files[i] != NULL)
				files[nfiles++] = vm->files[i];
		}
		struct keeper_spec spec = { .argv = argv, .fds = fds, .nfds = 2, .log = vm->files[F_QEMU_LOG],
					    .files = files, .nfiles = nfiles, .dir = vm->dir };
		rc = keeper_start(&vm->keeper, &spec, err);
		sbx_strv_free(argv);
	}
	close(con[1]);
	close(ctl[1]);
	if (rc < 0) {
		close(con[0]);
		close(ctl[0]);
		return -1;
	}
	/* From here the keeper owns the files; failures go through stop. */
	sbx_error_t cerr = NULL;
	if (opt->boot_log)
		console_echo(&vm->console, STDERR_FILENO, vm->t0);
	if (console_start(&vm->console, con[0], vm->files[F_CONSOLE], &cerr) < 0) {
		/* Not fatal: the VM runs without a console log. */
		sbx_warn("vm: %s", sbx_error_msg(cerr));
		sbx_error_free(&cerr);
	}
	vm->chan = chan_open(ctl[0], err);
	return vm->chan != NULL ? 0 : -1;
}

struct sbx_vm *sbx_vm_start(const struct sbx_vm_options *opt, sbx_error_t *err)
{
	struct sbx_vm *vm = calloc(1, sizeof(*vm));
	if (vm == NULL) {
		sbx_error_set(err, ENOMEM, "vm");
		return NULL;
	}
	pthread_mutex_init(&vm->lock, NULL);
	vm->t0 = sbx_vm_now_ms();
	console_init(&vm->console);
	vm->keeper.pid = -1;
	vm->keeper.lifeline = -1;
	vm->memory_bytes = (uint64_t)(opt->memory_mib ? opt->memory_mib : 512) << 20;
	vm->nofile = opt->nofile;
	vm->hostname = strdup(opt->hostname != NULL ? opt->hostname : "sandbox");
	vm->env = strv_dup(opt->env);
	vm->user = strdup(opt->user != NULL ? opt->user : "");
	enum sbx_accel accel;
	cleanup_free char *qemu = NULL, *kernel = NULL, *boot = NULL, *image = NULL;
	if (vm->hostname == NULL || vm->env == NULL || vm->user == NULL) {
		sbx_error_set(err, ENOMEM, "vm");
		goto fail;
	}
	if ((qemu = find_qemu(err)) == NULL || sbx_accel_choose(opt->accel, &accel, err) < 0 ||
	    (kernel = sbx_kernel_elf(opt->krunfw_path, err)) == NULL ||
	    (boot = find_boot_disk(opt->boot_disk, err)) == NULL)
		goto fail;
	vm->t.kernel = sbx_vm_now_ms() - vm->t0;
	if (prepare(vm, opt, &image, err) < 0) {
		remove_files(vm);
		goto fail;
	}
	vm->t.disks = sbx_vm_now_ms() - vm->t0;
	if (launch(vm, opt, qemu, kernel, boot, image, accel, err) < 0) {
		if (vm->keeper.pid > 0) {
			sbx_error_default_scode(err, "S300");
			sbx_vm_stop(vm, 0);
			return NULL;
		}
		remove_files(vm);
		goto fail;
	}
	vm->t.qemu = sbx_vm_now_ms() - vm->t0;
	return vm;
fail:
	sbx_error_default_scode(err, "S300");
	vm_free(vm);
	return NULL;
}

static bool keeper_gone(struct sbx_vm *vm)
{
	pthread_mutex_lock(&vm->lock);
	bool gone = vm->keeper.pid <= 0 || keeper_exited(&vm->keeper);
	pthread_mutex_unlock(&vm->lock);
	return gone;
}

/* Reads the end of QEMU's own stderr (it explains a failed start). */
static void qemu_log_tail(struct sbx_vm *vm, char *out, size_t cap)
{
	out[0] = '\0';
	cleanup_close int fd = open(vm->files[F_QEMU_LOG], O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	off_t size = lseek(fd, 0, SEEK_END);
	off_t from = size > (off_t)(cap - 1) ? size - (off_t)(cap - 1) : 0;
	ssize_t n = pread(fd, out, cap - 1, from);
	out[n > 0 ? n : 0] = '\0';
}

static int boot_failure(struct sbx_vm *vm, sbx_error_t *err)
{
	char tail[CONSOLE_TAIL_BYTES + 1];
	console_tail(&vm->console, tail);
	char qlog[QEMU_LOG_TAIL];
	qemu_log_tail(vm, qlog, sizeof(qlog));
	sbx_error_t e = *err;
	*err = NULL;
	sbx_error_scode(err, "S300", "VM did not boot: %s%s%s%s%s", sbx_error_msg(e),
			qlog[0] ? "\n--- qemu ---\n" : "", qlog,
			tail[0] ? "\n--- guest console (last lines) ---\n" : "", tail);
	if (e != NULL && *err != NULL)
		(*err)->errnum = e->errnum;
	sbx_error_free(&e);
	return -1;
}

int sbx_vm_wait_ready(struct sbx_vm *vm, int64_t deadline, sbx_error_t *err)
{
	if (chan_wait_hello(vm->chan, deadline, err) < 0)
		return boot_failure(vm, err);
	vm->t.hello = sbx_vm_now_ms() - vm->t0;
	uint8_t entropy[64];
	if (getrandom(entropy, sizeof(entropy), 0) != sizeof(entropy))
		return sbx_error_scode(err, "S300", "getrandom failed");
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	struct proto_config cfg = {
		.hostname = vm->hostname,
		.env = vm->env,
		.memory_bytes = vm->memory_bytes,
		.nofile = vm->nofile,
		.realtime_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec,
		.entropy = entropy,
		.entropy_len = sizeof(entropy),
		.user = vm->user,
	};
	if (chan_send_config(vm->chan, &cfg, err) < 0 || chan_wait_ready(vm->chan, deadline, err) < 0)
		return boot_failure(vm, err);
	vm->t.ready = sbx_vm_now_ms() - vm->t0;
	sbx_debug("vm: boot phases (ms since start): kernel %lld, disks %lld, qemu %lld, hello %lld, ready %lld",
		  (long long)vm->t.kernel, (long long)vm->t.disks, (long long)vm->t.qemu, (long long)vm->t.hello,
		  (long long)vm->t.ready);
	return 0;
}

int sbx_vm_ping(struct sbx_vm *vm, int64_t deadline, sbx_error_t *err)
{
	return chan_ping(vm->chan, deadline, err);
}

bool sbx_vm_alive(struct sbx_vm *vm)
{
	return !chan_dead(vm->chan) && !keeper_gone(vm);
}

const struct sbx_vm_timings *sbx_vm_timings(struct sbx_vm *vm)
{
	return &vm->t;
}

int sbx_vm_stop(struct sbx_vm *vm, int64_t deadline)
{
	if (vm == NULL)
		return -1;
	int64_t grace = sbx_vm_now_ms() + SHUTDOWN_GRACE_MS;
	if (deadline >= 0 && deadline < grace)
		grace = deadline;
	if (vm->chan != NULL && !chan_dead(vm->chan)) {
		sbx_error_t err = NULL;
		if (chan_send_shutdown(vm->chan, &err) < 0 || chan_wait_dead(vm->chan, grace, &err) < 0)
			sbx_debug("vm stop: %s; killing QEMU", sbx_error_msg(err));
		sbx_error_free(&err);
	}
	/* The guest closing its port comes a moment before QEMU exits. */
	while (!keeper_gone(vm) && sbx_vm_now_ms() < grace)
		usleep(5000);
	pthread_mutex_lock(&vm->lock);
	int status = keeper_stop(&vm->keeper);
	pthread_mutex_unlock(&vm->lock);
	console_stop(&vm->console);
	chan_close(vm->chan);
	vm_free(vm);
	return status;
}

struct sbx_vm_proc *sbx_vm_spawn(struct sbx_vm *vm, char *const *argv, char *const *env, const char *cwd,
				 bool with_stdin, sbx_error_t *err)
{
	static char *const empty[] = { NULL };
	if (argv == NULL || argv[0] == NULL || argv[0][0] == '\0') {
		sbx_error_set(err, EINVAL, "empty command");
		return NULL;
	}
	struct sbx_vm_proc *p = malloc(sizeof(*p));
	if (p == NULL) {
		sbx_error_set(err, ENOMEM, "process");
		return NULL;
	}
	struct proto_spawn sp = {
		.argv = (char **)argv,
		.env = (char **)(env != NULL ? env : empty),
		.cwd = (char *)(cwd != NULL ? cwd : ""),
		.flags = with_stdin ? PROTO_SPAWN_STDIN : 0,
	};
	if ((p->s = chan_spawn(vm->chan, &sp, err)) == NULL) {
		free(p);
		return NULL;
	}
	return p;
}

ssize_t sbx_vm_proc_write(struct sbx_vm_proc *p, const void *buf, size_t len, int64_t deadline,
			  sbx_error_t *err)
{
	return chan_stream_write(p->s, buf, len, deadline, err);
}

int sbx_vm_proc_close_stdin(struct sbx_vm_proc *p, sbx_error_t *err)
{
	return chan_stream_close_stdin(p->s, err);
}

ssize_t sbx_vm_proc_read(struct sbx_vm_proc *p, int *fd, void *buf, size_t len, int64_t deadline,
			 sbx_error_t *err)
{
	enum chan_output which = CHAN_STDOUT;
	ssize_t n = chan_stream_read(p->s, &which, buf, len, deadline, err);
	*fd = which == CHAN_STDERR ? 2 : 1;
	return n;
}

int sbx_vm_proc_kill(struct sbx_vm_proc *p, int sig, sbx_error_t *err)
{
	if (sig < 1 || sig > PROTO_MAX_SIGNAL)
		return sbx_error_set(err, EINVAL, "bad signal %d", sig);
	return chan_stream_kill(p->s, sig, err);
}

int sbx_vm_proc_wait(struct sbx_vm_proc *p, int64_t deadline, int *status, sbx_error_t *err)
{
	return chan_stream_wait(p->s, deadline, status, err);
}

void sbx_vm_proc_free(struct sbx_vm_proc *p)
{
	if (p == NULL)
		return;
	chan_stream_release(p->s);
	free(p);
}

int sbx_vm_write_file(struct sbx_vm *vm, const char *path, uint32_t mode, bool parents, const void *data,
		      size_t len, int64_t deadline, sbx_error_t *err)
{
	struct proto_fs_write w = { (char *)path, mode, parents ? PROTO_FS_PARENTS : 0 };
	struct chan_stream *s = chan_fs_write(vm->chan, &w, err);
	if (s == NULL)
		return -1;
	const char *p = data;
	int rc = 0;
	while (len > 0 && rc == 0) {
		size_t chunk = len < PROTO_MAX_CHUNK ? len : PROTO_MAX_CHUNK;
		ssize_t n = chan_stream_write(s, p, chunk, deadline, err);
		if (n < 0) {
			rc = -1;
		} else {
			p += n;
			len -= (size_t)n;
		}
	}
	if (rc == 0)
		rc = chan_stream_close_stdin(s, err);
	/* A write refused mid-way ended the stream: the guest's FS_ERROR,
	 * which wait reports, says why better than the write did. */
	sbx_error_t werr = NULL;
	int code = -1;
	if (chan_stream_wait(s, deadline, &code, &werr) < 0) {
		sbx_error_free(err);
		*err = werr;
		rc = -1;
	} else if (rc == 0 && code != 0) {
		rc = sbx_error_set(err, EIO, "write %s: guest answered %d", path, code);
	}
	sbx_error_free(&werr);
	chan_stream_release(s);
	return rc;
}
