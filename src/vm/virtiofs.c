/* virtio-fs shares and their virtiofsd processes (see virtiofs.h). */
#include "vm/virtiofs.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/scodes.h"
#include "common/strv.h"
#include "proto/proto.h"

_Static_assert(VIRTIOFSD_FD == KEEPER_SIDE_FD, "the keeper hands virtiofsd its socket at VIRTIOFSD_FD");

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

static int init_one(struct virtiofs_share *s, const struct sbx_vm_share *in, size_t i, sbx_error_t *err)
{
	if (in->host_dir == NULL || in->host_dir[0] != '/' || in->guest_path == NULL)
		return sbx_error_set(err, EINVAL, "share %zu: host_dir must be absolute and guest_path set", i);
	if (check_guest_path(in->guest_path, err) < 0)
		return -1;
	struct stat st;
	if ((s->host_dir = realpath(in->host_dir, NULL)) == NULL || stat(s->host_dir, &st) < 0)
		return sbx_error_errno(err, errno, "share %s", in->host_dir);
	if (!S_ISDIR(st.st_mode))
		return sbx_error_set(err, ENOTDIR, "share %s is not a directory", in->host_dir);
	if (strpbrk(s->host_dir, ",\\") != NULL)
		return sbx_error_set(err, EINVAL, "share %s: a ',' or '\\' in the path is not supported", s->host_dir);
	if ((s->guest_path = strdup(in->guest_path)) == NULL)
		return sbx_error_errno(err, ENOMEM, "share");
	s->read_only = in->read_only;
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
		fs->v[i].listen_fd = fs->v[i].qemu_fd = -1;
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
		if ((s->argv = virtiofs_argv(bin, s->host_dir, err)) == NULL || socket_pair(s, dirfd, err) < 0)
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
		sides[i] = (struct keeper_side){ .argv = s->argv, .fd = s->listen_fd, .enter = virtiofs_enter, .arg = s };
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
		fs->v[i].listen_fd = fs->v[i].qemu_fd = -1;
	}
}

void virtiofs_free(struct virtiofs *fs)
{
	virtiofs_close_fds(fs);
	for (size_t i = 0; i < fs->n; i++) {
		free(fs->v[i].host_dir);
		free(fs->v[i].guest_path);
		sbx_strv_free(fs->v[i].argv);
	}
	free(fs->v);
	fs->v = NULL;
	fs->n = 0;
}

int virtiofs_enter(const void *share)
{
	const struct virtiofs_share *s = share;
	if (!s->read_only)
		return 0;
	/* Nothing of this reaches the host's mount table. */
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0 ||
	    mount(s->host_dir, s->host_dir, NULL, MS_BIND | MS_REC, NULL) < 0)
		return -1;
	struct mount_attr ro = { .attr_set = MOUNT_ATTR_RDONLY };
	return mount_setattr(AT_FDCWD, s->host_dir, AT_RECURSIVE, &ro, sizeof(ro));
}
