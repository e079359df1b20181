/* fs::chmod: mode (and optionally owner) of a path, which is followed when
 * it is a symlink, and with recursive of every entry below it except the
 * symlinks there (their targets may lie anywhere). */
#include "guest/fs_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guest/fs_util.h"
#include "guest/fs_walk.h"

struct chmod_ctx {
	const struct proto_fs_chmod *q;
	uint64_t count;
};

static uid_t want_uid(const struct proto_fs_chmod *q)
{
	return q->flags & PROTO_FS_SET_UID ? (uid_t)q->uid : (uid_t)-1;
}

static gid_t want_gid(const struct proto_fs_chmod *q)
{
	return q->flags & PROTO_FS_SET_GID ? (gid_t)q->gid : (gid_t)-1;
}

static int change_entry(void *ctx, enum fs_walk_event ev, const struct fs_walk_entry *e, sbx_error_t *err)
{
	struct chmod_ctx *c = ctx;
	if (ev == FS_WALK_DIR_POST || S_ISLNK(e->st->st_mode))
		return 0;
	if (fchmodat(e->dirfd, e->name, c->q->mode, 0) < 0)
		return fs_path_error(err, errno, e->path);
	if ((c->q->flags & (PROTO_FS_SET_UID | PROTO_FS_SET_GID)) &&
	    fchownat(e->dirfd, e->name, want_uid(c->q), want_gid(c->q), AT_SYMLINK_NOFOLLOW) < 0)
		return fs_path_error(err, errno, e->path);
	c->count++;
	return 0;
}

int fs_chmod(const struct proto_fs_chmod *q, struct fs_reply *r, sbx_error_t *err)
{
	struct stat lst;
	if (lstat(q->path, &lst) < 0 || (S_ISLNK(lst.st_mode) && access(q->path, F_OK) < 0))
		return fs_path_error(err, errno, q->path);
	if (chmod(q->path, q->mode) < 0)
		return fs_path_error(err, errno, q->path);
	if ((q->flags & (PROTO_FS_SET_UID | PROTO_FS_SET_GID)) && chown(q->path, want_uid(q), want_gid(q)) < 0)
		return fs_path_error(err, errno, q->path);
	struct chmod_ctx c = { q, 1 };
	if ((q->flags & PROTO_FS_RECURSIVE) && S_ISDIR(lst.st_mode) &&
	    fs_walk(q->path, q->path, change_entry, &c, err) < 0)
		return -1;
	return fs_reply_done(r, c.count, 0, err);
}
