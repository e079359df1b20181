#include "vm/vm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
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
#include "vm/oom_log.h"
#include "vm/qemu_cmdline.h"
#include "vm/qmp.h"
#include "vm/snapshot.h"
#include "vm/tsc.h"
#include "vm/vm_chan.h"
#include "vm/vm_jail.h"

#define QEMU_FIX "install qemu-system-x86 (scripts/setup) or set SANDBOX_QEMU"
#define BOOT_DISK_FIX "build the boot_disk target (ninja -C build) or set SANDBOX_BOOT_DISK"
#define SHUTDOWN_GRACE_MS 3000
#define QEMU_LOG_TAIL 1024
/* A restored VM answers within about a second; past this, cold boot. */
#define RESTORE_READY_MS 30000
#define SNAPSHOT_SAVE_MS 60000

struct sbx_vm {
	char *dir;
	char *files[4]; /* scratch, console log, qemu log, built image (or NULL) */
	/* What a cold boot after a failed restore needs again. */
	char *qemu, *kernel, *boot, *image;
	enum sbx_accel accel;
	unsigned cpus, memory_mib, tcg_cache_mib;
	bool boot_log;
	bool restored;          /* started from a snapshot: no HELLO comes */
	char snap_key[SNAPSHOT_KEY_LEN + 1];
	int snap_lock;          /* >= 0: this boot saves the key's template */
	int qmp_fd;             /* our end of the monitor, -1 = none */
	struct sbx_jail_host *jail_host;
	uint64_t jail_memory_mib;
	struct jail *jail;      /* QEMU's, NULL when unconfined */
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
		char *abs = access(p, R_OK) == 0 ? realpath(p, NULL) : NULL;
		if (abs != NULL)
			return abs;
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

static void free_files(struct sbx_vm *vm)
{
	for (size_t i = 0; i < sizeof(vm->files) / sizeof(vm->files[0]); i++) {
		free(vm->files[i]);
		vm->files[i] = NULL;
	}
	free(vm->dir);
	vm->dir = NULL;
}

static void drop_snapshot_fds(struct sbx_vm *vm)
{
	if (vm->snap_lock >= 0)
		close(vm->snap_lock);
	if (vm->qmp_fd >= 0)
		close(vm->qmp_fd);
	vm->snap_lock = vm->qmp_fd = -1;
}

static void vm_free(struct sbx_vm *vm)
{
	jail_release(vm->jail);
	free_files(vm);
	drop_snapshot_fds(vm);
	free(vm->qemu);
	free(vm->kernel);
	free(vm->boot);
	free(vm->image);
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

static int make_files(struct sbx_vm *vm, sbx_error_t *err)
{
	if ((vm->dir = make_vm_dir(err)) == NULL)
		return -1;
	vm->files[F_SCRATCH] = path_join(vm->dir, "scratch.ext4");
	vm->files[F_CONSOLE] = path_join(vm->dir, "console.log");
	vm->files[F_QEMU_LOG] = path_join(vm->dir, "qemu.log");
	if (vm->files[F_SCRATCH] == NULL || vm->files[F_CONSOLE] == NULL || vm->files[F_QEMU_LOG] == NULL)
		return sbx_error_errno(err, ENOMEM, "vm paths");
	return 0;
}

static int prepare(struct sbx_vm *vm, const struct sbx_vm_options *opt, char **image, sbx_error_t *err)
{
	if (make_files(vm, err) < 0)
		return -1;
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
		/* Absolute: a jailed QEMU finds it at the same path in its root. */
		if ((*image = realpath(opt->image, NULL)) == NULL)
			return sbx_error_scode(err, "S300", "image %s: %s", opt->image, strerror(errno));
	} else {
		return sbx_error_scode(err, "S300", "image %s is neither a file nor a directory", opt->image);
	}
	if (*image == NULL)
		return sbx_error_errno(err, ENOMEM, "vm paths");
	return 0;
}

/* The scratch disk, and how this VM starts: from the key's snapshot when
 * one exists (*state_fd >= 0), else cold, saving the template when this
 * VM wins its build lock.  Snapshot trouble is logged, never fatal. */
static int choose_start(struct sbx_vm *vm, bool use_snapshot, int *state_fd, sbx_error_t *err)
{
	*state_fd = -1;
	sbx_error_t serr = NULL;
	struct snapshot_id id = { vm->qemu, vm->kernel, vm->boot, vm->image, vm->cpus, vm->memory_mib,
				  /* in MHz: measurement noise must not split templates */
				  vm->accel == SBX_ACCEL_TCG ? (sbx_host_tsc_khz() + 500) / 1000 : 0, (int)vm->accel,
				  SBX_SCRATCH_SIZE };
	if (use_snapshot && snapshot_key(&id, vm->snap_key, &serr) == 0) {
		cleanup_free char *dir = snapshot_find(vm->snap_key, &serr);
		if (dir != NULL && snapshot_restore_files(dir, vm->files[F_SCRATCH], state_fd, &serr) == 0) {
			vm->restored = true;
			return 0;
		}
		if (dir == NULL && serr == NULL)
			vm->snap_lock = snapshot_lock(vm->snap_key, &serr);
	}
	if (serr != NULL && serr->errnum != EWOULDBLOCK)
		sbx_warn("vm: snapshot: %s; booting without one", sbx_error_msg(serr));
	sbx_error_free(&serr);
	return disk_scratch_create(vm->files[F_SCRATCH], SBX_SCRATCH_SIZE, err);
}

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++) {
		if (p[i] >= 0)
			close(p[i]);
	}
}

static int launch(struct sbx_vm *vm, int state_fd, sbx_error_t *err)
{
	if (sbx_jail_host_active(vm->jail_host)) {
		struct vm_jail_args ja = {
			.dir = vm->dir, .qemu = vm->qemu, .kernel = vm->kernel, .boot = vm->boot, .image = vm->image,
			.scratch = vm->files[F_SCRATCH], .cpus = vm->cpus, .memory_limit_mib = vm->jail_memory_mib,
			.guest_mib = vm->memory_mib, .kvm = vm->accel == SBX_ACCEL_KVM,
			.saves_template = vm->snap_lock >= 0,
		};
		if ((vm->jail = vm_jail_prepare(vm->jail_host, &ja, err)) == NULL)
			return -1;
	}
	int con[2] = { -1, -1 }, ctl[2] = { -1, -1 }, qmp[2] = { -1, -1 };
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, con) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) < 0 ||
	    ((vm->snap_lock >= 0 || state_fd >= 0) && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, qmp) < 0)) {
		int e = errno;
		close_pair(con);
		close_pair(ctl);
		close_pair(qmp);
		return sbx_error_errno(err, e, "socketpair");
	}
	int fds[4] = { con[1], ctl[1] };
	int nfds = 2, qmp_at = 0, state_at = 0;
	if (qmp[1] >= 0) {
		qmp_at = KEEPER_QEMU_FD_BASE + nfds;
		fds[nfds++] = qmp[1];
	}
	if (state_fd >= 0) {
		state_at = KEEPER_QEMU_FD_BASE + nfds;
		fds[nfds++] = state_fd;
	}
	struct qemu_config qc = {
		.qemu = vm->qemu, .kernel = vm->kernel, .boot_disk = vm->boot, .image = vm->image,
		.scratch = vm->files[F_SCRATCH], .cpus = vm->cpus, .memory_mib = vm->memory_mib, .accel = vm->accel,
		.console_fd = KEEPER_QEMU_FD_BASE, .control_fd = KEEPER_QEMU_FD_BASE + 1,
		.qmp_fd = qmp_at, .incoming_fd = state_at,
		.tsc_khz = vm->accel == SBX_ACCEL_TCG ? sbx_host_tsc_khz() : 0, .boot_log = vm->boot_log,
		.tcg_cache_mib = vm->tcg_cache_mib,
	};
	char **argv = qemu_cmdline(&qc, err);
	int rc = -1;
	if (argv != NULL) {
		const char *files[4];
		int nfiles = 0;
		for (size_t i = 0; i < 4; i++) {
			if (vm->files[i] != NULL)
				files[nfiles++] = vm->files[i];
		}
		struct keeper_spec spec = { .argv = argv, .fds = fds, .nfds = nfds, .log = vm->files[F_QEMU_LOG],
					    .files = files, .nfiles = nfiles, .dir = vm->dir, .jail = vm->jail };
		rc = keeper_start(&vm->keeper, &spec, err);
		sbx_strv_free(argv);
	}
	close(con[1]);
	close(ctl[1]);
	if (qmp[1] >= 0)
		close(qmp[1]);
	if (rc < 0) {
		close(con[0]);
		close(ctl[0]);
		if (qmp[0] >= 0)
			close(qmp[0]);
		return -1;
	}
	vm->qmp_fd = qmp[0];
	/* From here the keeper owns the files; failures go through stop. */
	sbx_error_t cerr = NULL;
	if (vm->boot_log)
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
	vm->snap_lock = vm->qmp_fd = -1;
	vm->cpus = opt->cpus ? opt->cpus : 1;
	vm->memory_mib = opt->memory_mib ? opt->memory_mib : 512;
	vm->boot_log = opt->boot_log;
	vm->tcg_cache_mib = opt->tcg_cache_mib ? opt->tcg_cache_mib : SBX_VM_TCG_CACHE_DEFAULT_MIB;
	vm->memory_bytes = (uint64_t)vm->memory_mib << 20;
	vm->jail_host = opt->jail;
	vm->nofile = opt->nofile;
	vm->hostname = strdup(opt->hostname != NULL ? opt->hostname : "sandbox");
	vm->env = strv_dup(opt->env);
	vm->user = strdup(opt->user != NULL ? opt->user : "");
	int state_fd = -1;
	if (vm->hostname == NULL || vm->env == NULL || vm->user == NULL) {
		sbx_error_set(err, ENOMEM, "vm");
		goto fail;
	}
	if ((vm->qemu = find_qemu(err)) == NULL || sbx_accel_choose(opt->accel, &vm->accel, err) < 0 ||
	    (vm->kernel = sbx_kernel_elf(opt->krunfw_path, err)) == NULL ||
	    (vm->boot = find_boot_disk(opt->boot_disk, err)) == NULL)
		goto fail;
	vm->jail_memory_mib = opt->jail_memory_mib ? opt->jail_memory_mib
						  : vm->memory_mib + SBX_VM_JAIL_QEMU_MIB +
							    (vm->accel == SBX_ACCEL_TCG ? vm->tcg_cache_mib : 0);
	vm->t.kernel = sbx_vm_now_ms() - vm->t0;
	/* A rootfs directory becomes a private image: nothing to key on. */
	if (prepare(vm, opt, &vm->image, err) < 0 ||
	    choose_start(vm, !opt->cold_boot && vm->files[F_IMAGE] == NULL, &state_fd, err) < 0) {
		remove_files(vm);
		goto fail;
	}
	vm->t.disks = sbx_vm_now_ms() - vm->t0;
	int rc = launch(vm, state_fd, err);
	if (state_fd >= 0)
		close(state_fd);
	if (rc < 0) {
		if (vm->keeper.pid > 0) {
			sbx_error_default_scode(err, "S300");
			sbx_vm_stop(vm, 0);
			return NULL;
		}
		remove_files(vm);
		goto fail;
	}
	vm->t.qemu = sbx_vm_now_ms() - vm->t0;
	vm->t.restored = vm->restored;
	return vm;
fail:
	sbx_error_default_scode(err, "S300");
	vm_free(vm);
	return NULL;
}

/* After a failed restore: QEMU goes (the keeper removes the VM's files),
 * the template goes, and the same VM boots cold. */
static int cold_restart(struct sbx_vm *vm, sbx_error_t *err)
{
	pthread_mutex_lock(&vm->lock);
	keeper_stop(&vm->keeper);
	pthread_mutex_unlock(&vm->lock);
	jail_release(vm->jail);
	vm->jail = NULL;
	console_stop(&vm->console);
	console_destroy(&vm->console);
	console_init(&vm->console);
	chan_close(vm->chan);
	vm->chan = NULL;
	vm->keeper.pid = -1;
	vm->keeper.lifeline = -1;
	free_files(vm);
	snapshot_invalidate(vm->snap_key);
	vm->restored = vm->t.restored = false;
	if (make_files(vm, err) < 0 || disk_scratch_create(vm->files[F_SCRATCH], SBX_SCRATCH_SIZE, err) < 0) {
		remove_files(vm);
		free_files(vm);
		return -1;
	}
	return launch(vm, -1, err);
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
	if (vm->files[F_QEMU_LOG] == NULL)
		return; /* a cold restart after a failed restore failed early */
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

static int send_config(struct sbx_vm *vm, sbx_error_t *err)
{
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
	return chan_send_config(vm->chan, &cfg, err);
}

/* The template is saved while the guest waits for CONFIG; the VM then
 * goes on.  A failed save costs only the template. */
static void save_template(struct sbx_vm *vm)
{
	int64_t t = sbx_vm_now_ms();
	struct qmp q;
	sbx_error_t serr = NULL;
	int fd = vm->qmp_fd;
	vm->qmp_fd = -1;
	if (qmp_open(&q, fd, t + SNAPSHOT_SAVE_MS, &serr) == 0) {
		if (snapshot_save(&q, vm->snap_key, vm->files[F_SCRATCH], t + SNAPSHOT_SAVE_MS, &serr) == 0)
			sbx_info("vm: snapshot %.12s saved in %lld ms", vm->snap_key, (long long)(sbx_vm_now_ms() - t));
		qmp_close(&q);
	}
	if (serr != NULL)
		sbx_warn("vm: snapshot not saved: %s", sbx_error_msg(serr));
	sbx_error_free(&serr);
	drop_snapshot_fds(vm);
}

/* A restored VM gets CONFIG at once.  If QEMU or the guest never answers
 * (the saved state did not load), it boots cold instead. */
/* QEMU loads the saved state, then runs the VM. */
static int wait_restored(struct sbx_vm *vm, int64_t limit, sbx_error_t *err)
{
	struct qmp q;
	int fd = vm->qmp_fd;
	vm->qmp_fd = -1;
	if (qmp_open(&q, fd, limit, err) < 0)
		return -1;
	char reply[QMP_LINE_MAX];
	int rc;
	while ((rc = qmp_call(&q, "{\"execute\": \"query-status\"}", -1, reply, sizeof(reply), limit, err)) == 0 &&
	       strstr(reply, "\"status\": \"running\"") == NULL) {
		/* The template was saved stopped, and QEMU restores that. */
		if (strstr(reply, "\"status\": \"paused\"") != NULL) {
			if ((rc = qmp_call(&q, "{\"execute\": \"cont\"}", -1, NULL, 0, limit, err)) < 0)
				break;
			continue;
		}
		if (strstr(reply, "\"status\": \"inmigrate\"") == NULL) {
			rc = sbx_error_set(err, EIO, "QEMU did not load the snapshot: %.200s", reply);
			break;
		}
		if (sbx_vm_now_ms() >= limit) {
			rc = sbx_error_set(err, ETIMEDOUT, "QEMU still loading the snapshot");
			break;
		}
		usleep(10000);
	}
	qmp_close(&q);
	return rc;
}

static int restored_ready(struct sbx_vm *vm, int64_t deadline, sbx_error_t *err)
{
	int64_t limit = sbx_vm_now_ms() + RESTORE_READY_MS;
	sbx_error_t rerr = NULL;
	if (wait_restored(vm, limit, &rerr) == 0 && send_config(vm, &rerr) == 0 &&
	    chan_wait_ready(vm->chan, deadline >= 0 && deadline < limit ? deadline : limit, &rerr) == 0)
		return 1;
	if (chan_boot_failed(vm->chan) || (deadline >= 0 && sbx_vm_now_ms() >= deadline)) {
		*err = rerr; /* the guest's own verdict, or the caller's deadline */
		return -1;
	}
	sbx_warn("vm: restore from snapshot %.12s failed (%s); booting cold", vm->snap_key, sbx_error_msg(rerr));
	sbx_error_free(&rerr);
	return cold_restart(vm, err);
}

int sbx_vm_wait_ready(struct sbx_vm *vm, int64_t deadline, sbx_error_t *err)
{
	int rc = vm->restored ? restored_ready(vm, deadline, err) : 0;
	if (rc < 0)
		return boot_failure(vm, err);
	if (rc == 0) {
		if (chan_wait_hello(vm->chan, deadline, err) < 0)
			return boot_failure(vm, err);
		vm->t.hello = sbx_vm_now_ms() - vm->t0;
		if (vm->snap_lock >= 0)
			save_template(vm);
		if (send_config(vm, err) < 0 || chan_wait_ready(vm->chan, deadline, err) < 0)
			return boot_failure(vm, err);
	}
	vm->t.ready = sbx_vm_now_ms() - vm->t0;
	sbx_debug("vm: boot phases (ms since start): kernel %lld, disks %lld, qemu %lld, hello %lld, ready %lld%s",
		  (long long)vm->t.kernel, (long long)vm->t.disks, (long long)vm->t.qemu, (long long)vm->t.hello,
		  (long long)vm->t.ready, vm->t.restored ? " (restored from a snapshot)" : "");
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

void sbx_vm_death_cause(struct sbx_vm *vm, int64_t wait_ms, char *buf, size_t len)
{
	int64_t until = sbx_vm_now_ms() + wait_ms;
	while (!keeper_gone(vm) && sbx_vm_now_ms() < until)
		usleep(10000);
	pthread_mutex_lock(&vm->lock);
	bool gone = vm->keeper.pid <= 0 || keeper_exited(&vm->keeper);
	int status = vm->keeper.status;
	pid_t qemu = vm->keeper.qemu_pid;
	pthread_mutex_unlock(&vm->lock);
	/* The kernel's clock may lag ours by a little: a second of slack. */
	uint64_t since_us = vm->t0 > 1000 ? (uint64_t)(vm->t0 - 1000) * 1000 : 0;
	if (!gone)
		snprintf(buf, len, "the sandbox's VM stopped answering: its control connection was lost");
	else if (status == 128 + SIGKILL && oom_killed(qemu, since_us))
		snprintf(buf, len, "the sandbox's VM was killed by the host's out-of-memory killer");
	else if (status > 128)
		snprintf(buf, len, "the sandbox's VM exited: killed by signal %d (%s)", status - 128,
			 strsignal(status - 128));
	else if (status == 0)
		snprintf(buf, len, "the sandbox's VM exited: its guest powered off");
	else
		snprintf(buf, len, "the sandbox's VM exited: QEMU failed with status %d", status);
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
