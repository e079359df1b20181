#include "guest/fs_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guest/fs_util.h"

struct fs_write {
	int fd;
	char *path, *tmp;
	mode_t mode;
};

/* mkdir -p of path's parent directory. */
static int make_parents(const char *path, sbx_error_t *err)
{
	char *dir = strdup(path);
	if (dir == NULL)
		return sbx_error_errno(err, ENOMEM, "%s", path);
	char *slash = strrchr(dir, '/');
	int rc = 0;
	if (slash != NULL && slash != dir) {
		*slash = '\0';
		for (char *p = dir + 1; rc == 0; p++) {
			bool end = *p == '\0';
			if (*p != '/' && !end)
				continue;
			*p = '\0';
			if (mkdir(dir, 0755) < 0 && errno != EEXIST)
				rc = sbx_error_errno(err, errno, "create directory %s", dir);
			if (end)
				break;
			*p = '/';
		}
	}
	free(dir);
	return rc;
}

/* ENOENT "parent not found: <parent>": the host's S211 with the fix
 * {parents: true}. */
static void parent_missing(const char *path, sbx_error_t *err)
{
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		n--;
	while (n > 0 && path[n - 1] != '/')
		n--;
	while (n > 1 && path[n - 1] == '/')
		n--;
	sbx_error_set(err, ENOENT, PROTO_TEXT_PARENT_MISSING ": %.*s", (int)(n > 0 ? n : 1), n > 0 ? path : ".");
}

struct fs_write *fs_write_open(const struct proto_fs_write *req, sbx_error_t *err)
{
	struct fs_write *w = calloc(1, sizeof(*w));
	if (w == NULL)
		return sbx_error_errno(err, ENOMEM, "%s", req->path), NULL;
	w->fd = -1;
	w->mode = (mode_t)req->mode;
	/* A random suffix: two writes of one path must not share a temp. */
	if ((w->path = strdup(req->path)) == NULL) {
		sbx_error_errno(err, ENOMEM, "%s", req->path);
		goto fail;
	}
	if ((w->tmp = fs_temp_sibling(req->path, err)) == NULL)
		goto fail;
	struct stat st;
	if (stat(w->path, &st) == 0 && S_ISDIR(st.st_mode)) {
		sbx_error_set(err, EISDIR, "is a directory: %s", w->path);
		goto fail;
	}
	if ((req->flags & PROTO_FS_PARENTS) && make_parents(w->path, err) < 0)
		goto fail;
	w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (w->fd < 0) {
		int e = errno;
		if (e == ENOENT)
			parent_missing(w->path, err);
		else
			sbx_error_errno(err, e, "%s", w->path);
		goto fail;
	}
	return w;
fail:
	fs_write_abort(w);
	return NULL;
}

int fs_write_data(struct fs_write *w, const void *p, size_t n, sbx_error_t *err)
{
	const char *b = p;
	while (n > 0) {
		ssize_t k = write(w->fd, b, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return sbx_error_errno(err, errno, "write %s", w->path);
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

int fs_write_finish(struct fs_write *w, sbx_error_t *err)
{
	int rc = 0;
	/* fchmod, not the open mode: the umask must not apply. */
	if (fchmod(w->fd, w->mode) < 0)
		rc = sbx_error_errno(err, errno, "chmod %s", w->path);
	/* durable before it becomes visible under its name */
	if (rc == 0 && fsync(w->fd) < 0)
		rc = sbx_error_errno(err, errno, "fsync %s", w->path);
	int fd = w->fd;
	w->fd = -1; /* close() releases it even when it fails */
	if (close(fd) < 0 && rc == 0)
		rc = sbx_error_errno(err, errno, "close %s", w->path);
	if (rc == 0 && rename(w->tmp, w->path) < 0)
		rc = sbx_error_errno(err, errno, "rename into %s", w->path);
	if (rc == 0) {
		free(w->tmp);
		w->tmp = NULL;
	}
	fs_write_abort(w);
	return rc;
}

void fs_write_abort(struct fs_write *w)
{
	if (w == NULL)
		return;
	if (w->fd >= 0)
		close(w->fd);
	if (w->tmp != NULL)
		unlink(w->tmp);
	free(w->tmp);
	free(w->path);
	free(w);
}
