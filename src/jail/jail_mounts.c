#include "jail/jail_mounts.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* Small: it holds only directories, mount points and device nodes. */
#define ROOT_TMPFS_OPTS "mode=0755,size=1m,nr_inodes=4096"

static bool is_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* Absolute, no "." or ".." components, no "//", no trailing '/'. */
static bool clean_path(const char *p)
{
	if (p == NULL || p[0] != '/' || p[1] == '\0' || strlen(p) >= PATH_MAX)
		return false;
	for (const char *c = p; *c != '\0'; c++) {
		if (*c != '/')
			continue;
		if (c[1] == '/' || c[1] == '\0')
			return false;
		if (c[1] == '.' && (c[2] == '/' || c[2] == '\0' || (c[2] == '.' && (c[3] == '/' || c[3] == '\0'))))
			return false;
	}
	return true;
}

static struct jail_step *add(struct jail_mounts *m, enum jail_step_kind kind, const char *path, size_t plen,
			     const char *source, sbx_error_t *err)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 16;
		struct jail_step *s = realloc(m->steps, cap * sizeof(*s));
		if (s == NULL) {
			sbx_error_errno(err, ENOMEM, "jail mounts");
			return NULL;
		}
		m->steps = s;
		m->cap = cap;
	}
	struct jail_step *s = &m->steps[m->n];
	*s = (struct jail_step){ .kind = kind };
	s->path = strndup(path, plen);
	if (s->path != NULL && asprintf(&s->target, "%s%s", m->root, s->path) < 0)
		s->target = NULL;
	if (source != NULL)
		s->source = strdup(source);
	if (s->path == NULL || s->target == NULL || (source != NULL && s->source == NULL)) {
		free(s->path);
		free(s->target);
		free(s->source);
		sbx_error_errno(err, ENOMEM, "jail mounts");
		return NULL;
	}
	m->n++;
	return s;
}

/* Whether a step already provides `path`, or a directory above it. */
static bool covered(const struct jail_mounts *m, const char *path)
{
	for (size_t i = 0; i < m->n; i++) {
		const struct jail_step *s = &m->steps[i];
		if (((s->kind == JAIL_BIND_RO || s->kind == JAIL_BIND_RW) && s->dir) || s->kind == JAIL_SYMLINK) {
			if (is_under(path, s->path))
				return true;
		} else if (strcmp(s->path, path) == 0) {
			return true;
		}
	}
	return false;
}

static bool has_dir(const struct jail_mounts *m, const char *path, size_t len)
{
	for (size_t i = 0; i < m->n; i++) {
		if (m->steps[i].kind == JAIL_MKDIR && strlen(m->steps[i].path) == len &&
		    strncmp(m->steps[i].path, path, len) == 0)
			return true;
	}
	return false;
}

/* A MKDIR for every directory above `path` not made yet. */
static int parents(struct jail_mounts *m, const char *path, sbx_error_t *err)
{
	for (const char *c = strchr(path + 1, '/'); c != NULL; c = strchr(c + 1, '/')) {
		size_t len = (size_t)(c - path);
		if (!has_dir(m, path, len) && add(m, JAIL_MKDIR, path, len, NULL, err) == NULL)
			return -1;
	}
	return 0;
}

static int add_dir(struct jail_mounts *m, const char *dir, sbx_error_t *err)
{
	if (!clean_path(dir))
		return sbx_error_set(err, EINVAL, "jail: bad path %s", dir);
	struct stat st;
	if (lstat(dir, &st) < 0)
		return errno == ENOENT ? 0 : sbx_error_errno(err, errno, "jail: %s", dir);
	if (covered(m, dir))
		return 0;
	if (S_ISLNK(st.st_mode)) {
		char link[PATH_MAX];
		ssize_t n = readlink(dir, link, sizeof(link) - 1);
		if (n < 0)
			return sbx_error_errno(err, errno, "jail: readlink %s", dir);
		link[n] = '\0';
		return parents(m, dir, err) < 0 || add(m, JAIL_SYMLINK, dir, strlen(dir), link, err) == NULL ? -1 : 0;
	}
	if (!S_ISDIR(st.st_mode))
		return sbx_error_set(err, ENOTDIR, "jail: %s is not a directory", dir);
	struct jail_step *s;
	if (parents(m, dir, err) < 0 || (s = add(m, JAIL_BIND_RO, dir, strlen(dir), dir, err)) == NULL)
		return -1;
	s->dir = true;
	return 0;
}

static int add_file(struct jail_mounts *m, const char *file, bool rw, bool exec, sbx_error_t *err)
{
	if (!clean_path(file))
		return sbx_error_set(err, EINVAL, "jail: bad path %s", file);
	struct stat st;
	if (stat(file, &st) < 0)
		return sbx_error_errno(err, errno, "jail: %s", file);
	if (!S_ISREG(st.st_mode))
		return sbx_error_set(err, EINVAL, "jail: %s is not a regular file", file);
	if (covered(m, file)) {
		if (rw)
			return sbx_error_set(err, EINVAL, "jail: %s is inside a read-only directory", file);
		return 0;
	}
	struct jail_step *step;
	if (parents(m, file, err) < 0 ||
	    (step = add(m, rw ? JAIL_BIND_RW : JAIL_BIND_RO, file, strlen(file), file, err)) == NULL)
		return -1;
	step->exec = exec;
	return 0;
}

int jail_mounts_build(struct jail_mounts *m, const char *root, const struct jail_mount_request *r,
		      sbx_error_t *err)
{
	*m = (struct jail_mounts){ .uid = r->uid, .gid = r->gid };
	if ((m->root = strdup(root)) == NULL)
		return sbx_error_errno(err, ENOMEM, "jail mounts");
	for (size_t i = 0; i < r->n_ro_dirs; i++) {
		if (add_dir(m, r->ro_dirs[i], err) < 0)
			goto fail;
	}
	for (size_t i = 0; i < r->n_rw_files; i++) {
		if (add_file(m, r->rw_files[i], true, false, err) < 0)
			goto fail;
	}
	for (size_t i = 0; i < r->n_ro_files; i++) {
		if (add_file(m, r->ro_files[i], false, false, err) < 0)
			goto fail;
	}
	if (r->exe != NULL && add_file(m, r->exe, false, true, err) < 0)
		goto fail;
	if (r->proc && add(m, JAIL_PROC, "/proc", 5, NULL, err) == NULL)
		goto fail;
	if (r->n_devices > 0 && !has_dir(m, "/dev", 4) && add(m, JAIL_MKDIR, "/dev", 4, NULL, err) == NULL)
		goto fail;
	for (size_t i = 0; i < r->n_devices; i++) {
		const struct jail_device *d = &r->devices[i];
		char path[64];
		int n = snprintf(path, sizeof(path), "/dev/%s", d->name);
		if (n < 0 || (size_t)n >= sizeof(path) || strchr(d->name, '/') != NULL) {
			sbx_error_set(err, EINVAL, "jail: bad device name %s", d->name);
			goto fail;
		}
		struct jail_step *s = add(m, JAIL_MKNOD, path, (size_t)n, NULL, err);
		if (s == NULL)
			goto fail;
		s->major = d->major;
		s->minor = d->minor;
		s->mode = d->mode;
		s->owned = d->owned;
	}
	return 0;
fail:
	jail_mounts_free(m);
	return -1;
}

static int touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int bind(const struct jail_step *s)
{
	if ((s->dir ? mkdir(s->target, 0755) : touch(s->target)) < 0)
		return -1;
	if (mount(s->source, s->target, NULL, MS_BIND | MS_REC, NULL) < 0)
		return -1;
	unsigned long flags = MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV;
	if (s->kind == JAIL_BIND_RO)
		flags |= MS_RDONLY;
	if (!s->dir && !s->exec)
		flags |= MS_NOEXEC; /* disks and kernels are data */
	return mount(NULL, s->target, NULL, flags, NULL);
}

static int play(const struct jail_mounts *m, const struct jail_step *s)
{
	switch (s->kind) {
	case JAIL_MKDIR:
		return mkdir(s->target, 0755) < 0 && errno != EEXIST ? -1 : 0;
	case JAIL_BIND_RO:
	case JAIL_BIND_RW:
		return bind(s);
	case JAIL_SYMLINK:
		return symlink(s->source, s->target);
	case JAIL_PROC:
		/* Shows only the jail's own PID namespace. */
		if (mkdir(s->target, 0555) < 0)
			return -1;
		return mount("proc", s->target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	case JAIL_MKNOD:
		if (mknod(s->target, S_IFCHR | s->mode, makedev(s->major, s->minor)) < 0 ||
		    chmod(s->target, s->mode) < 0)
			return -1;
		return s->owned ? chown(s->target, m->uid, m->gid) : 0;
	}
	errno = EINVAL;
	return -1;
}

int jail_mounts_apply(const struct jail_mounts *m, const char **failed)
{
	*failed = "/";
	/* Nothing mounted from here on may reach the host's namespace. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -1;
	*failed = m->root;
	if (mount("sbx-jail", m->root, "tmpfs", MS_NOSUID | MS_NOEXEC, ROOT_TMPFS_OPTS) < 0)
		return -1;
	for (size_t i = 0; i < m->n; i++) {
		*failed = m->steps[i].path;
		if (play(m, &m->steps[i]) < 0)
			return -1;
	}
	*failed = m->root;
	if (mount(NULL, m->root, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC, NULL) < 0 ||
	    chdir(m->root) < 0)
		return -1;
	/* The old root is stacked under the new one, then detached: nothing
	 * of the host's tree stays reachable. */
	*failed = "pivot_root";
	if (syscall(SYS_pivot_root, ".", ".") < 0 || umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		return -1;
	return 0;
}

void jail_mounts_free(struct jail_mounts *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->steps[i].path);
		free(m->steps[i].target);
		free(m->steps[i].source);
	}
	free(m->steps);
	free(m->root);
	*m = (struct jail_mounts){ 0 };
}
