/* fs::rm: lstat; a directory needs recursive unless empty; links are
 * unlinked, never followed (the tree walk uses *at() calls and O_NOFOLLOW,
 * so a symlink inside the tree never leads the removal out of it). */
#include "guest/fs_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guest/fs_util.h"
#include "guest/fs_walk.h"

static int remove_entry(void *ctx, enum fs_walk_event ev, const struct fs_walk_entry *e, sbx_error_t *err)
{
	(void)ctx;
	if (ev == FS_WALK_DIR_PRE)
		return 0;
	if (unlinkat(e->dirfd, e->name, ev == FS_WALK_DIR_POST ? AT_REMOVEDIR : 0) < 0 && errno != ENOENT)
		return fs_path_error(err, errno, e->path);
	return 0;
}

int fs_rm(const struct proto_fs_rm *q, struct fs_reply *r, sbx_error_t *err)
{
	struct stat st;
	if (lstat(q->path, &st) < 0)
		return fs_path_error(err, errno, q->path);
	if (!S_ISDIR(st.st_mode)) {
		if (unlink(q->path) < 0)
			return fs_path_error(err, errno, q->path);
		return fs_reply_done(r, 1, 0, err);
	}
	if ((q->flags & PROTO_FS_RECURSIVE) && fs_walk(q->path, q->path, remove_entry, NULL, err) < 0)
		return -1;
	if (rmdir(q->path) < 0)
		return fs_path_error(err, errno == EEXIST ? ENOTEMPTY : errno, q->path);
	return fs_reply_done(r, 1, 0, err);
}
