#include "jail/jail.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/log.h"
#include "jail/jail_caps.h"
#include "jail/jail_cgroup.h"
#include "jail/jail_ids.h"
#include "jail/jail_mounts.h"

#define ROOT_DIR SBX_JAIL_RUN_DIR "/root" /* empty: each jail mounts its root here, in its own namespace */
#define UID_DIR SBX_JAIL_RUN_DIR "/uids"
#define JAIL_MAX_RW_FILES 8
#define JAIL_NOFILE 4096 /* QEMU holds a few dozen */
#define CG_FIX "delegate a cgroup v2 subtree with the memory, pids and cpu controllers to the daemon " \
	"(systemd: Delegate=yes) or mount the cgroup v1 memory, pids and cpu controllers"

struct sbx_jail_host {
	enum sbx_jail_mode mode;
	bool active;
	uint32_t uid_base;
	struct jail_cg_host cg;
	char describe[1024];
};

struct jail {
	uint32_t uid;
	int uid_lock;
	struct jail_cg cg;
	struct jail_mounts mounts;
	struct rlimit nofile, fsize, core;
	bool host_net;
};

/* What the jailed program opens by path besides its own files: itself, its
 * libraries and QEMU's data files; /bin and /sbin for a program that is a
 * script (SANDBOX_QEMU).  On a merged-/usr host all but /usr are symlinks. */
static const char *const ro_dirs[] = { "/usr", "/lib", "/lib64", "/bin", "/sbin" };

int sbx_jail_mode_parse(const char *s, enum sbx_jail_mode *out, sbx_error_t *err)
{
	static const char *const names[] = { "auto", "required", "off" };
	for (int i = 0; i < 3; i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = (enum sbx_jail_mode)i;
			return 0;
		}
	}
	return sbx_error_set(err, EINVAL, "jail must be auto, required or off, got \"%s\"", s);
}

const char *sbx_jail_mode_name(enum sbx_jail_mode m)
{
	return m == SBX_JAIL_REQUIRED ? "required" : m == SBX_JAIL_OFF ? "off" : "auto";
}

static int make_run_dirs(char *why, size_t len)
{
	const char *dirs[] = { SBX_JAIL_RUN_DIR, ROOT_DIR, UID_DIR };
	for (int i = 0; i < 3; i++) {
		if (mkdir(dirs[i], 0755) < 0 && errno != EEXIST) {
			snprintf(why, len, "cannot create %s: %s", dirs[i], strerror(errno));
			return -1;
		}
	}
	return 0;
}

struct sbx_jail_host *sbx_jail_host_new(enum sbx_jail_mode mode, uint32_t uid_base, sbx_error_t *err)
{
	struct sbx_jail_host *h = calloc(1, sizeof(*h));
	if (h == NULL)
		return sbx_error_errno(err, ENOMEM, "jail"), NULL;
	h->mode = mode;
	h->uid_base = uid_base;
	if (mode == SBX_JAIL_OFF) {
		snprintf(h->describe, sizeof(h->describe), "off (configuration jail: off)");
		sbx_info("jail: off (configuration); QEMU runs as the daemon's user, confined by its seccomp filter only");
		return h;
	}
	if (uid_base == 0 || uid_base > UINT32_MAX - 1 - SBX_JAIL_UID_COUNT) {
		free(h);
		return sbx_error_set(err, EINVAL, "jail_uid_base %u: must be 1..%u", uid_base,
				     UINT32_MAX - 1 - SBX_JAIL_UID_COUNT), NULL;
	}
	char why[768] = "";
	const char *fix = NULL, *missing = NULL;
	if (geteuid() != 0) {
		snprintf(why, sizeof(why), "the daemon is not root");
		fix = "run the daemon as root";
	} else if (!jail_caps_sufficient(&missing)) {
		snprintf(why, sizeof(why), "the daemon lacks %s", missing);
		fix = "run it with all capabilities (a privileged container)";
	} else if (jail_cg_probe(&h->cg, why, sizeof(why)) < 0) {
		fix = CG_FIX;
	} else if (make_run_dirs(why, sizeof(why)) < 0) {
		fix = "make " SBX_JAIL_RUN_DIR " writable by root";
	}
	if (fix != NULL) {
		jail_cg_host_free(&h->cg);
		if (mode == SBX_JAIL_REQUIRED) {
			sbx_error_set(err, EPERM, "jail: required, but %s; to enable it, %s", why, fix);
			free(h);
			return NULL;
		}
		snprintf(h->describe, sizeof(h->describe), "none (%s)", why);
		sbx_warn("jail: not in force: %s; QEMU runs as the daemon's user in its namespaces, confined by its "
			 "seccomp filter only; to enable it, %s (or set jail: off to silence this warning)",
			 why, fix);
		return h;
	}
	h->active = true;
	snprintf(h->describe, sizeof(h->describe),
		 "uid/gid %u-%u (one per VM), cgroup v%d under %s, mount/PID/IPC/UTS/network namespaces, "
		 "pivot_root, no capabilities, no_new_privs",
		 uid_base, uid_base + SBX_JAIL_UID_COUNT - 1, h->cg.v == JAIL_CG_V2 ? 2 : 1, h->cg.parent[0]);
	sbx_info("jail: %s", h->describe);
	return h;
}

bool sbx_jail_host_active(const struct sbx_jail_host *h)
{
	return h != NULL && h->active;
}

const char *sbx_jail_host_describe(const struct sbx_jail_host *h)
{
	return h != NULL ? h->describe : "off";
}

unsigned sbx_jail_remove_leftovers(struct sbx_jail_host *h)
{
	return sbx_jail_host_active(h) ? jail_cg_remove_leftovers(&h->cg) : 0;
}

void sbx_jail_host_free(struct sbx_jail_host *h)
{
	if (h == NULL)
		return;
	jail_cg_host_free(&h->cg);
	free(h);
}

static void limit(struct rlimit *out, int resource, rlim_t want)
{
	/* Without CAP_SYS_RESOURCE a hard limit can only go down. */
	struct rlimit cur;
	if (getrlimit(resource, &cur) == 0 && cur.rlim_max != RLIM_INFINITY && cur.rlim_max < want)
		want = cur.rlim_max;
	out->rlim_cur = out->rlim_max = want;
}

/* The files the jailed uid writes become its own; those it reads must be
 * readable by anyone (their directories are not: only the bind reaches
 * them).  The mode is set while root still owns the file: changing the mode
 * of another uid's file would need CAP_FOWNER, which the service lacks. */
static int hand_over(const struct jail_request *r, uid_t uid, sbx_error_t *err)
{
	for (int i = 0; i < r->n_rw; i++) {
		if (chmod(r->rw_files[i], 0600) < 0 || chown(r->rw_files[i], uid, uid) < 0)
			return sbx_error_errno(err, errno, "jail: give %s to uid %u", r->rw_files[i], (unsigned)uid);
	}
	struct stat st;
	if (r->exe != NULL && (stat(r->exe, &st) < 0 || (st.st_mode & (S_IROTH | S_IXOTH)) != (S_IROTH | S_IXOTH)))
		return sbx_error_set(err, EACCES, "jail: %s is not readable and executable by the VM's uid %u", r->exe,
				     (unsigned)uid);
	for (int i = 0; i < r->n_ro; i++) {
		if (stat(r->ro_files[i], &st) < 0)
			return sbx_error_errno(err, errno, "jail: %s", r->ro_files[i]);
		if (!(st.st_mode & S_IROTH))
			return sbx_error_set(err, EACCES, "jail: %s (mode %03o) is not readable by the VM's uid %u",
					     r->ro_files[i], (unsigned)(st.st_mode & 0777), (unsigned)uid);
	}
	return 0;
}

void jail_report(const char *what, const char *detail, int e)
{
	char buf[512];
	size_t n = 0;
	const char *parts[] = { what, ": ", detail, ": ", strerrordesc_np(e), "\n" };
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		const char *p = parts[i] != NULL ? parts[i] : "?";
		while (*p != '\0' && n < sizeof(buf) - 1)
			buf[n++] = *p++;
	}
	ssize_t w = write(STDERR_FILENO, buf, n);
	(void)w;
}

/* What both kinds of jail have: the cgroup leaf with r's limits, and
 * RLIMIT_CORE 0. */
static struct jail *jail_new(struct sbx_jail_host *h, const struct jail_request *r, sbx_error_t *err)
{
	if (!sbx_jail_host_active(h))
		return sbx_error_set(err, EINVAL, "jail: not in force"), NULL;
	struct jail *j = calloc(1, sizeof(*j));
	if (j == NULL)
		return sbx_error_errno(err, ENOMEM, "jail"), NULL;
	j->uid_lock = -1;
	struct jail_cg_limits l;
	jail_cg_limits(r->memory_mib, r->cpus, &l);
	if (jail_cg_create(&h->cg, r->name, &l, &j->cg, err) < 0) {
		free(j);
		return NULL;
	}
	j->core.rlim_cur = j->core.rlim_max = 0;
	return j;
}

struct jail *jail_prepare(struct sbx_jail_host *h, const struct jail_request *r, sbx_error_t *err)
{
	struct jail *j = jail_new(h, r, err);
	if (j == NULL)
		return NULL;
	if (jail_uid_acquire(UID_DIR, h->uid_base, SBX_JAIL_UID_COUNT, &j->uid, &j->uid_lock, err) < 0) {
		jail_release(j);
		return NULL;
	}
	struct jail_device dev[] = { { "null", 1, 3, 0666, false },
				     { "urandom", 1, 9, 0666, false },
				     { "kvm", 10, 232, 0600, true } };
	if (r->n_rw < 0 || r->n_rw > JAIL_MAX_RW_FILES) {
		jail_release(j);
		return sbx_error_set(err, E2BIG, "jail: too many read-write files"), NULL;
	}
	struct jail_mount_request mr = {
		.ro_dirs = ro_dirs, .n_ro_dirs = sizeof(ro_dirs) / sizeof(ro_dirs[0]),
		.ro_files = r->ro_files, .n_ro_files = (size_t)r->n_ro,
		.rw_files = r->rw_files, .n_rw_files = (size_t)r->n_rw,
		.exe = r->exe,
		.proc = r->proc,
		.devices = dev, .n_devices = r->kvm ? 3 : 2,
		.uid = j->uid, .gid = j->uid,
	};
	if (hand_over(r, j->uid, err) < 0 || jail_mounts_build(&j->mounts, ROOT_DIR, &mr, err) < 0) {
		jail_release(j);
		return NULL;
	}
	limit(&j->nofile, RLIMIT_NOFILE, JAIL_NOFILE);
	limit(&j->fsize, RLIMIT_FSIZE, r->fsize_bytes);
	j->host_net = r->host_net;
	return j;
}

struct jail *jail_prepare_limits(struct sbx_jail_host *h, const struct jail_request *r, sbx_error_t *err)
{
	return jail_new(h, r, err);
}

int jail_enter_limits(const struct jail *j)
{
	const char *step = "cgroup";
	if (jail_cg_join(&j->cg) < 0)
		goto fail;
	step = "rlimit";
	if (setrlimit(RLIMIT_CORE, &j->core) < 0)
		goto fail;
	return 0;
fail:
	jail_report("jail", step, errno);
	return -1;
}

uid_t jail_uid(const struct jail *j)
{
	return j->uid;
}

pid_t jail_fork(const struct jail *j)
{
	(void)j;
	if (unshare(CLONE_NEWPID) < 0)
		return -1;
	return fork();
}

int jail_enter(const struct jail *j, int keep_fds)
{
	/* A change of uid clears the parent-death signal: kept to set again. */
	int pdeath = 0;
	const char *step = "parent-death signal";
	if (prctl(PR_GET_PDEATHSIG, &pdeath, 0, 0, 0) < 0)
		goto fail;
	step = "cgroup";
	if (jail_cg_join(&j->cg) < 0)
		goto fail;
	step = "rlimit";
	if (setrlimit(RLIMIT_NOFILE, &j->nofile) < 0 || setrlimit(RLIMIT_FSIZE, &j->fsize) < 0 ||
	    setrlimit(RLIMIT_CORE, &j->core) < 0)
		goto fail;
	step = "unshare";
	if (unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | (j->host_net ? 0 : CLONE_NEWNET)) < 0)
		goto fail;
	step = "sethostname";
	if (sethostname("jail", 4) < 0)
		goto fail;
	if (jail_mounts_apply(&j->mounts, &step) < 0)
		goto fail;
	step = "close_range";
	if (syscall(SYS_close_range, keep_fds, ~0u, 0) < 0)
		goto fail;
	if (jail_drop_privileges(j->uid, j->uid, &step) < 0)
		goto fail;
	step = "parent-death signal";
	if (pdeath != 0 && prctl(PR_SET_PDEATHSIG, pdeath, 0, 0, 0) < 0)
		goto fail;
	umask(077);
	return 0;
fail:
	jail_report("jail", step, errno);
	return -1;
}

void jail_kill(const struct jail *j)
{
	jail_cg_kill(&j->cg);
}

void jail_release(struct jail *j)
{
	if (j == NULL)
		return;
	jail_cg_kill(&j->cg);
	jail_cg_free(&j->cg);
	jail_mounts_free(&j->mounts);
	jail_uid_release(j->uid_lock);
	free(j);
}
