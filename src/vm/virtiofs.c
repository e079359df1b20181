/* virtio-fs shares and their virtiofsd processes (see virtiofs.h). */
#include "vm/virtiofs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/scodes.h"
#include "common/strv.h"
#include "proto/proto.h"

_Static_assert(VIRTIOFSD_FD == KEEPER_SIDE_FD, "the keeper hands virtiofsd its socket at VIRTIOFSD_FD");
/* The pinned directory, for virtiofs_enter (which closes it). */
#define VIRTIOFS_SIDE_DIR_FD (KEEPER_SIDE_FD + 1)
/* Where, in virtiofsd's mount namespace only, a tmpfs holds the share at
 * VIRTIOFS_STAGE<vm dir>/<tag>: a path its uid can walk. */
#define VIRTIOFS_STAGE "/tmp"
/* nobody/nogroup: the probe's uid, and the gid of a share whose group is
 * root's. */
#define VIRTIOFS_PROBE_ID 65534

#define VIRTIOFSD_FIX "install qemu-system-common (scripts/setup) or set SANDBOX_VIRTIOFSD"

static int check_guest_path(const char *p, sbx_error_t *err)
{
	bool named = false;
	for (const char *c = p; *c != '\0';) {
		while (*c == '/')
			c++;
		size_t len = strcspn(c, "/");
		if ((len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
			return sbx_error_set(err, EINVAL, "share guest path \"%s\" has a . or .. component", p);
		named |= len > 0;
		c += len;
	}
	if (p[0] != '/' || !named || strlen(p) > PROTO_MAX_PATH)
		return sbx_error_set(err, EINVAL, "share guest path \"%s\" must be absolute and not /", p);
	return 0;
}

/* Its groups dropped, then gid and uid: raw system calls, as the jail
 * makes them, since glibc's wrappers signal threads a forked child of the
 * daemon does not have. */
static int drop_ids(uid_t uid, gid_t gid)
{
	if (syscall(SYS_setgroups, 0, NULL) < 0 || syscall(SYS_setresgid, gid, gid, gid) < 0 ||
	    syscall(SYS_setresuid, uid, uid, uid) < 0)
		return -1;
	return 0;
}

/* Whether an unprivileged uid may make a user namespace here (a sysctl,
 * a seccomp profile or an LSM may forbid it): a child tries once. */
static bool userns_probe(void)
{
	pid_t pid = fork();
	if (pid == 0)
		_exit(drop_ids(VIRTIOFS_PROBE_ID, VIRTIOFS_PROBE_ID) < 0 || unshare(CLONE_NEWUSER) < 0 ? 1 : 0);
	int status;
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return false;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static bool userns_ok;
static void userns_once(void)
{
	userns_ok = geteuid() == 0 && userns_probe();
	if (userns_ok)
		sbx_info("virtiofsd: read-only shares of a user's directory are served as that user, in a user "
			 "namespace of their own");
	else if (geteuid() == 0)
		sbx_warn("virtiofsd: this host forbids user namespaces to unprivileged uids: every virtiofsd runs "
			 "as root");
}

/* virtiofsd's uid and gid: a read-only share of a directory that a user
 * other than root owns is served as that user (see virtiofs.h); 0 keeps
 * root. */
static void pick_owner(struct virtiofs_share *s, const struct stat *st)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	s->uid = s->gid = 0;
	if (!s->read_only || st->st_uid == 0)
		return;
	pthread_once(&once, userns_once);
	if (!userns_ok)
		return;
	s->uid = st->st_uid;
	s->gid = st->st_gid != 0 ? st->st_gid : VIRTIOFS_PROBE_ID;
}

/* The directory pinned: the caller's descriptor, else host_dir opened
 * once; everything after this uses the descriptor, never the path. */
static int pin_dir(struct virtiofs_share *s, const struct sbx_vm_share *in, struct stat *st, sbx_error_t *err)
{
	if (in->host_fd >= 0) {
		s->dir_fd = fcntl(in->host_fd, F_DUPFD_CLOEXEC, 3);
	} else {
		cleanup_free char *real = realpath(in->host_dir, NULL);
		if (real == NULL)
			return sbx_error_errno(err, errno, "share %s", in->host_dir);
		s->dir_fd = open(real, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	}
	if (s->dir_fd < 0 || fstat(s->dir_fd, st) < 0)
		return sbx_error_errno(err, errno, "share %s", in->host_dir);
	if (!S_ISDIR(st->st_mode))
		return sbx_error_set(err, ENOTDIR, "share %s is not a directory", in->host_dir);
	return 0;
}

static int init_one(struct virtiofs_share *s, const struct sbx_vm_share *in, size_t i, sbx_error_t *err)
{
	if (in->host_dir == NULL || in->host_dir[0] != '/' || in->guest_path == NULL)
		return sbx_error_set(err, EINVAL, "share %zu: host_dir must be absolute and guest_path set", i);
	if (check_guest_path(in->guest_path, err) < 0)
		return -1;
	struct stat st;
	if (pin_dir(s, in, &st, err) < 0)
		return -1;
	if ((s->host_dir = strdup(in->host_dir)) == NULL || (s->guest_path = strdup(in->guest_path)) == NULL)
		return sbx_error_errno(err, ENOMEM, "share");
	s->read_only = in->read_only;
	pick_owner(s, &st);
	snprintf(s->tag, sizeof(s->tag), "sbxfs%zu", i);
	return 0;
}

int virtiofs_init(struct virtiofs *fs, const struct sbx_vm_share *shares, size_t n, sbx_error_t *err)
{
	fs->v = NULL;
	fs->n = 0;
	if (n == 0)
		return 0;
	if (n > SBX_VM_MAX_SHARES || shares == NULL)
		return sbx_error_set(err, EINVAL, "%zu shares, at most %d", n, SBX_VM_MAX_SHARES);
	if ((fs->v = calloc(n, sizeof(*fs->v))) == NULL)
		return sbx_error_errno(err, ENOMEM, "shares");
	for (size_t i = 0; i < n; i++)
		fs->v[i].listen_fd = fs->v[i].qemu_fd = fs->v[i].dir_fd = -1;
	fs->n = n;
	for (size_t i = 0; i < n; i++) {
		if (init_one(&fs->v[i], &shares[i], i, err) < 0)
			return -1;
	}
	return 0;
}

char **virtiofs_argv(const char *binary, const char *source, sbx_error_t *err)
{
	if (binary == NULL || binary[0] != '/' || source == NULL || source[0] != '/' || strpbrk(source, ",\\")) {
		sbx_error_set(err, EINVAL, "virtiofsd: bad binary or source");
		return NULL;
	}
	char fd[32], opts[PROTO_MAX_PATH + 128];
	snprintf(fd, sizeof(fd), "--fd=%d", VIRTIOFSD_FD);
	/* Its own namespace sandbox; warnings and errors (on its stderr, the
	 * VM's QEMU log) only. */
	int len = snprintf(opts, sizeof(opts), "source=%s,sandbox=namespace,cache=auto,log_level=warn", source);
	if (len < 0 || (size_t)len >= sizeof(opts)) {
		sbx_error_set(err, ENAMETOOLONG, "virtiofsd: source path too long");
		return NULL;
	}
	const char *v[] = { binary, "-f", fd, "-o", opts, NULL };
	char **out = sbx_strv_dup((char *const *)v);
	if (out == NULL)
		sbx_error_errno(err, ENOMEM, "virtiofsd argv");
	return out;
}

static char *find_virtiofsd(sbx_error_t *err)
{
	const char *env = getenv("SANDBOX_VIRTIOFSD");
	const char *p = env != NULL && env[0] != '\0' ? env : VIRTIOFSD_DEFAULT;
	if (p[0] == '/' && access(p, X_OK) == 0)
		return strdup(p);
	sbx_error_scode(err, SBX_S_VM_BOOT, "virtiofsd %s is not an executable absolute path; %s", p, VIRTIOFSD_FIX);
	return NULL;
}

/* A listening socket in dir (reached through /proc/self/fd, so a long
 * state directory never overflows sun_path), QEMU's end connected to it,
 * and the name unlinked: nobody else can connect. */
static int socket_pair(struct virtiofs_share *s, int dirfd, sbx_error_t *err)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char name[32];
	snprintf(name, sizeof(name), "%s.sock", s->tag);
	snprintf(a.sun_path, sizeof(a.sun_path), "/proc/self/fd/%d/%s", dirfd, name);
	if ((s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    (s->qemu_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return sbx_error_errno(err, errno, "virtiofs socket");
	if (bind(s->listen_fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		return sbx_error_errno(err, errno, "bind %s", name);
	int rc = listen(s->listen_fd, 1) < 0 || connect(s->qemu_fd, (struct sockaddr *)&a, sizeof(a)) < 0 ? -1 : 0;
	int e = errno;
	unlinkat(dirfd, name, 0);
	if (rc < 0)
		return sbx_error_errno(err, e, "virtiofs socket %s", name);
	return 0;
}

int virtiofs_open(struct virtiofs *fs, const char *dir, sbx_error_t *err)
{
	if (fs->n == 0)
		return 0;
	cleanup_free char *bin = find_virtiofsd(err);
	if (bin == NULL)
		return -1;
	cleanup_close int dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return sbx_error_errno(err, errno, "open %s", dir);
	for (size_t i = 0; i < fs->n; i++) {
		struct virtiofs_share *s = &fs->v[i];
		if (asprintf(&s->source, VIRTIOFS_STAGE "%s/%s", dir, s->tag) < 0) {
			s->source = NULL;
			return sbx_error_errno(err, ENOMEM, "share");
		}
		if (strlen(s->source) >= PATH_MAX)
			return sbx_error_set(err, ENAMETOOLONG, "share: %s", s->source);
		if ((s->argv = virtiofs_argv(bin, s->source, err)) == NULL || socket_pair(s, dirfd, err) < 0)
			return -1;
	}
	return 0;
}

void virtiofs_plan(const struct virtiofs *fs, int *fds, int *nfds, struct qemu_share *qs, struct keeper_side *sides)
{
	for (size_t i = 0; i < fs->n; i++) {
		const struct virtiofs_share *s = &fs->v[i];
		qs[i] = (struct qemu_share){ .fd = KEEPER_QEMU_FD_BASE + *nfds, .tag = s->tag };
		fds[(*nfds)++] = s->qemu_fd;
		sides[i] = (struct keeper_side){
			.argv = s->argv, .fd = s->listen_fd, .fd2 = s->dir_fd, .enter = virtiofs_enter, .arg = s
		};
	}
}

void virtiofs_config(const struct virtiofs *fs, struct proto_share *out)
{
	for (size_t i = 0; i < fs->n; i++)
		out[i] = (struct proto_share){ .tag = (char *)fs->v[i].tag, .path = fs->v[i].guest_path,
					       .flags = fs->v[i].read_only ? PROTO_SHARE_RO : 0 };
}

void virtiofs_close_fds(struct virtiofs *fs)
{
	for (size_t i = 0; i < fs->n; i++) {
		if (fs->v[i].listen_fd >= 0)
			close(fs->v[i].listen_fd);
		if (fs->v[i].qemu_fd >= 0)
			close(fs->v[i].qemu_fd);
		if (fs->v[i].dir_fd >= 0)
			close(fs->v[i].dir_fd);
		fs->v[i].listen_fd = fs->v[i].qemu_fd = fs->v[i].dir_fd = -1;
	}
}

/* Measured 12 MiB with 2000 files looked up (an O_PATH descriptor each);
 * room for a worker's dependency tree. */
#define VIRTIOFSD_JAIL_MIB 128

int virtiofs_jail(struct virtiofs *fs, struct sbx_jail_host *h, const char *vm_dir, unsigned cpus,
		  sbx_error_t *err)
{
	if (!sbx_jail_host_active(h))
		return 0;
	const char *slash = strrchr(vm_dir, '/');
	for (size_t i = 0; i < fs->n; i++) {
		char name[256];
		int n = snprintf(name, sizeof(name), "%s-fs%zu", slash != NULL ? slash + 1 : vm_dir, i);
		if (n < 0 || (size_t)n >= sizeof(name))
			return sbx_error_set(err, ENAMETOOLONG, "virtiofsd jail name");
		struct jail_request r = { .name = name, .memory_mib = VIRTIOFSD_JAIL_MIB, .cpus = cpus };
		if ((fs->v[i].jail = jail_prepare_limits(h, &r, err)) == NULL)
			return -1;
	}
	return 0;
}

void virtiofs_free(struct virtiofs *fs)
{
	virtiofs_close_fds(fs);
	for (size_t i = 0; i < fs->n; i++) {
		jail_release(fs->v[i].jail);
		free(fs->v[i].host_dir);
		free(fs->v[i].source);
		free(fs->v[i].guest_path);
		sbx_strv_free(fs->v[i].argv);
	}
	free(fs->v);
	fs->v = NULL;
	fs->n = 0;
}

/* mkdir -p of a path on the private tmpfs (a copy: the slashes are cut
 * in turn). */
static int make_path(const char *path)
{
	char p[PATH_MAX];
	size_t n = strlen(path);
	if (n >= sizeof(p))
		return -1;
	memcpy(p, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		p[i] = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return -1;
		p[i] = path[i];
	}
	return 0;
}

/* "0 <id> 1" into /proc/self/<file>. */
static int write_map(const char *file, unsigned id)
{
	char buf[32] = "0 ", digits[12];
	size_t n = 2, d = 0;
	do
		digits[d++] = (char)('0' + id % 10);
	while ((id /= 10) != 0);
	while (d > 0)
		buf[n++] = digits[--d];
	memcpy(buf + n, " 1", 2);
	n += 2;
	int fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t w = write(fd, buf, n);
	close(fd);
	return w == (ssize_t)n ? 0 : -1;
}

/* The share's owner, root of a user namespace of its own: virtiofsd's
 * --sandbox=namespace gets the capabilities it needs over that namespace
 * only.  The uid change clears the parent-death signal (set again, then
 * the keeper must still be the parent) and the dumpable flag, without
 * which /proc/self's map files stay root's (execve sets it again anyway). */
static int become_owner(const struct virtiofs_share *s, pid_t keeper)
{
	if (drop_ids(s->uid, s->gid) < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != keeper || prctl(PR_SET_DUMPABLE, 1) < 0 ||
	    unshare(CLONE_NEWUSER) < 0)
		return -1;
	int fd = open("/proc/self/setgroups", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t w = write(fd, "deny", 4);
	close(fd);
	if (w != 4 || write_map("/proc/self/uid_map", (unsigned)s->uid) < 0 ||
	    write_map("/proc/self/gid_map", (unsigned)s->gid) < 0)
		return -1;
	return 0;
}

int virtiofs_enter(const void *share)
{
	const struct virtiofs_share *s = share;
	pid_t keeper = getppid();
	if (s->jail != NULL && jail_enter_limits(s->jail) < 0)
		return -1;
	/* A detached copy of the pinned directory, made before the mount
	 * namespace changes (a clone must come from the caller's own). */
	int tree = (int)syscall(SYS_open_tree, VIRTIOFS_SIDE_DIR_FD, "",
				OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
	close(VIRTIOFS_SIDE_DIR_FD);
	if (tree < 0) {
		jail_report("virtiofsd", "open_tree of the share", errno);
		return -1;
	}
	struct mount_attr ro = { .attr_set = MOUNT_ATTR_RDONLY };
	/* Nothing of this reaches the host's mount table. */
	if ((s->read_only && mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &ro, sizeof(ro)) < 0) ||
	    unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0 ||
	    mount("tmpfs", VIRTIOFS_STAGE, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=64k") < 0 ||
	    make_path(s->source) < 0 ||
	    syscall(SYS_move_mount, tree, "", AT_FDCWD, s->source, MOVE_MOUNT_F_EMPTY_PATH) < 0) {
		jail_report("virtiofsd", "the share's mount", errno);
		close(tree);
		return -1;
	}
	close(tree);
	if (s->uid != 0 && become_owner(s, keeper) < 0) {
		jail_report("virtiofsd", "the owner's uid in a user namespace", errno);
		return -1;
	}
	return 0;
}
