/* fs::mv: rename(2), refusing to replace dst unless asked; across
 * filesystems a regular file is copied to a temp sibling of dst, renamed
 * over it, and only then is src unlinked. */
#include "guest/fs_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "guest/fs_util.h"

static int copy_fd(int in, int out, const char *src, const char *dst, sbx_error_t *err)
{
	char buf[64 * 1024];
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fs_path_error(err, errno, src);
		if (n == 0)
			return 0;
		for (ssize_t off = 0; off < n;) {
			ssize_t k = write(out, buf + off, (size_t)(n - off));
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0)
				return fs_path_error(err, errno, dst);
			off += k;
		}
	}
}

static int copy_across(const char *src, const char *dst, sbx_error_t *err)
{
	cleanup_close int in = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (in < 0 || fstat(in, &st) < 0)
		return fs_path_error(err, errno, src);
	cleanup_free char *tmp = fs_temp_sibling(dst, err);
	if (tmp == NULL)
		return -1;
	cleanup_close int out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return fs_path_error(err, errno, dst);
	int rc = copy_fd(in, out, src, dst, err);
	if (rc == 0 && (fchmod(out, st.st_mode & 07777) < 0 || fsync(out) < 0))
		rc = fs_path_error(err, errno, dst);
	if (rc == 0 && fchown(out, st.st_uid, st.st_gid) < 0 && errno != EPERM)
		rc = fs_path_error(err, errno, dst);
	if (rc == 0 && rename(tmp, dst) < 0)
		rc = fs_path_error(err, errno, dst);
	if (rc < 0) {
		unlink(tmp);
		return -1;
	}
	if (unlink(src) < 0)
		return fs_path_error(err, errno, src);
	return 0;
}

int fs_mv(const struct proto_fs_mv *q, struct fs_reply *r, sbx_error_t *err)
{
	struct stat st, dst_st;
	if (lstat(q->src, &st) < 0) {
		if (errno == ENOENT)
			return sbx_error_set(err, ENOENT, "src not found: %s", q->src);
		return fs_path_error(err, errno, q->src);
	}
	if (!(q->flags & PROTO_FS_OVERWRITE) && lstat(q->dst, &dst_st) == 0)
		return sbx_error_set(err, EEXIST, "dst already exists: %s", q->dst);
	if (rename(q->src, q->dst) == 0)
		return fs_reply_done(r, 1, 0, err);
	int e = errno;
	if (e != EXDEV)
		return sbx_error_errno(err, e, "move %s to %s", q->src, q->dst);
	if (!S_ISREG(st.st_mode))
		return sbx_error_errno(err, e, "move %s to %s (only regular files are copied across filesystems)",
				       q->src, q->dst);
	if (copy_across(q->src, q->dst, err) < 0)
		return -1;
	return fs_reply_done(r, 1, 0, err);
}
