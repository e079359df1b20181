#include "guest/fs_walk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "guest/fs_util.h"
#include "proto/proto.h"

struct level {
	DIR *d;
	size_t path_len; /* of this directory's path in the buffer */
};

struct walk {
	struct level lv[FS_WALK_MAX_DEPTH + 1];
	int depth;
	char path[PROTO_MAX_PATH + 1];
	size_t rel_off; /* where rel starts in path */
};

/* Appends "/name" (or "name" after a bare "/") to the path buffer. */
static int push_name(struct walk *w, size_t base, const char *name, sbx_error_t *err)
{
	size_t n = strlen(name);
	int slash = base > 0 && w->path[base - 1] != '/';
	if (base + (size_t)slash + n > PROTO_MAX_PATH) {
		w->path[base] = '\0';
		return sbx_error_set(err, ENAMETOOLONG, "name too long: %s/%s", w->path, name);
	}
	if (slash)
		w->path[base++] = '/';
	memcpy(w->path + base, name, n + 1);
	return 0;
}

static const char *rel_of(const struct walk *w)
{
	return w->rel_off <= strlen(w->path) ? w->path + w->rel_off : "";
}

static int enter(struct walk *w, int parent_fd, const char *name, size_t path_len, sbx_error_t *err)
{
	if (w->depth > FS_WALK_MAX_DEPTH - 1)
		return sbx_error_set(err, ELOOP, "directory tree deeper than %d levels: %s", FS_WALK_MAX_DEPTH,
				     w->path);
	int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 1 : fs_path_error(err, errno, w->path);
	DIR *d = fdopendir(fd);
	if (d == NULL) {
		int e = errno;
		close(fd);
		return fs_path_error(err, e, w->path);
	}
	w->lv[w->depth++] = (struct level){ d, path_len };
	return 0;
}

static void leave(struct walk *w)
{
	closedir(w->lv[--w->depth].d);
}

static int step(struct walk *w, fs_walk_fn fn, void *ctx, sbx_error_t *err)
{
	struct level *top = &w->lv[w->depth - 1];
	errno = 0;
	struct dirent *de = readdir(top->d);
	if (de == NULL) {
		if (errno != 0) {
			w->path[top->path_len] = '\0';
			return fs_path_error(err, errno, w->path);
		}
		size_t len = top->path_len;
		leave(w);
		if (w->depth == 0)
			return 0;
		w->path[len] = '\0';
		const char *slash = strrchr(w->path, '/');
		struct fs_walk_entry e = { dirfd(w->lv[w->depth - 1].d), slash ? slash + 1 : w->path, w->path,
					   rel_of(w), NULL };
		return fn(ctx, FS_WALK_DIR_POST, &e, err);
	}
	if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
		return 0;
	if (push_name(w, top->path_len, de->d_name, err) < 0)
		return -1;
	int dfd = dirfd(top->d);
	struct stat st;
	if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : fs_path_error(err, errno, w->path);
	struct fs_walk_entry e = { dfd, de->d_name, w->path, rel_of(w), &st };
	if (!S_ISDIR(st.st_mode))
		return fn(ctx, FS_WALK_FILE, &e, err);
	int rc = fn(ctx, FS_WALK_DIR_PRE, &e, err);
	if (rc != 0)
		return rc == FS_WALK_SKIP ? 0 : rc;
	rc = enter(w, dfd, de->d_name, strlen(w->path), err);
	return rc < 0 ? -1 : 0;
}

int fs_walk(const char *open_path, const char *display_root, fs_walk_fn fn, void *ctx, sbx_error_t *err)
{
	struct walk *w = calloc(1, sizeof(*w));
	if (w == NULL)
		return sbx_error_errno(err, ENOMEM, "walk %s", display_root);
	size_t n = strlen(display_root);
	while (n > 1 && display_root[n - 1] == '/')
		n--;
	int rc = 0;
	if (n > PROTO_MAX_PATH) {
		rc = sbx_error_set(err, ENAMETOOLONG, "name too long: %s", display_root);
		goto out;
	}
	memcpy(w->path, display_root, n);
	w->path[n] = '\0';
	w->rel_off = n == 1 && w->path[0] == '/' ? 1 : n + 1;
	rc = enter(w, AT_FDCWD, open_path, n, err);
	if (rc > 0) /* the root vanished */
		rc = fs_path_error(err, ENOENT, display_root);
	while (rc == 0 && w->depth > 0)
		rc = step(w, fn, ctx, err);
	if (rc == FS_WALK_STOP)
		rc = 0;
out:
	while (w->depth > 0)
		leave(w);
	free(w);
	return rc;
}
