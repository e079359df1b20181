#include "guest/fs_targets.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "guest/fs_glob.h"
#include "guest/fs_util.h"
#include "guest/fs_walk.h"
#include "proto/proto.h"

int fs_target_open(struct fs_target *t, const char *path, sbx_error_t *err)
{
	t->path = path;
	t->open_path = NULL;
	if (lstat(path, &t->st) < 0)
		return fs_path_error(err, errno, path);
	if (S_ISLNK(t->st.st_mode)) {
		t->open_path = realpath(path, NULL);
		if (t->open_path == NULL || stat(t->open_path, &t->st) < 0)
			return fs_path_error(err, errno, path);
	} else if ((t->open_path = strdup(path)) == NULL) {
		return sbx_error_errno(err, ENOMEM, "%s", path);
	}
	return 0;
}

void fs_target_free(struct fs_target *t)
{
	free(t->open_path);
	t->open_path = NULL;
}

struct each {
	char *const *include, *const *exclude;
	fs_file_fn fn;
	void *ctx;
};

static int visit(void *ctx, enum fs_walk_event ev, const struct fs_walk_entry *e, sbx_error_t *err)
{
	struct each *x = ctx;
	if (ev == FS_WALK_DIR_PRE)
		return fs_glob_prune(x->exclude, e->rel) ? FS_WALK_SKIP : 0;
	if (ev != FS_WALK_FILE || !S_ISREG(e->st->st_mode) || !fs_glob_keep(x->include, x->exclude, e->rel))
		return 0;
	return x->fn(x->ctx, e->dirfd, e->name, e->path, err);
}

int fs_target_check(const struct fs_target *t, bool recursive, sbx_error_t *err)
{
	if (S_ISDIR(t->st.st_mode) && !recursive)
		return sbx_error_set(err, PROTO_FS_EINVALID,
				     "recursive=false on a directory is unsupported; pass a file path or set "
				     "recursive=true: %s", t->path);
	return 0;
}

int fs_target_each_file(struct fs_target *t, bool recursive, char *const *include, char *const *exclude,
			fs_file_fn fn, void *ctx, sbx_error_t *err)
{
	if (fs_target_check(t, recursive, err) < 0)
		return -1;
	if (S_ISDIR(t->st.st_mode)) {
		struct each x = { include, exclude, fn, ctx };
		return fs_walk(t->open_path, t->path, visit, &x, err);
	}
	if (!S_ISREG(t->st.st_mode))
		return sbx_error_set(err, PROTO_FS_EWRONGTYPE, "not a regular file: %s", t->path);
	char buf[PROTO_MAX_PATH + 1];
	if (!fs_glob_keep(include, exclude, fs_last_component(t->path, buf, sizeof(buf))))
		return 0;
	int rc = fn(ctx, AT_FDCWD, t->open_path, t->path, err);
	return rc == FS_WALK_STOP ? 0 : rc;
}
