/* fs::read: FS_META, then the file's bytes as STDOUT chunks, then EXIT 0.
 * Chunks go to the result pipe with blocking writes, so the dispatcher's
 * CREDIT window bounds what is in flight and memory stays flat. */
#include "guest/fs_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "guest/fs_util.h"

int fs_read(const struct proto_fs_path *q, struct fs_reply *r, sbx_error_t *err)
{
	/* O_NONBLOCK: opening a FIFO must not hang; it is refused below */
	cleanup_close int fd = open(q->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return fs_path_error(err, errno, q->path);
	if (S_ISDIR(st.st_mode))
		return fs_path_error(err, EISDIR, q->path);
	if (!S_ISREG(st.st_mode))
		return sbx_error_set(err, PROTO_FS_EWRONGTYPE, "not a regular file: %s", q->path);
	struct proto_msg meta = { .type = PROTO_FS_META };
	meta.u.fs_meta = (struct proto_fs_meta){ (uint64_t)st.st_size, st.st_mode & 07777, st.st_mtim.tv_sec };
	if (fs_reply_send(r, &meta, err) < 0)
		return -1;
	/* Each chunk is read behind room for its frame header: sent as it is. */
	static uint8_t frame[PROTO_HEADER_SIZE + PROTO_MAX_CHUNK];
	for (;;) {
		ssize_t n = read(fd, frame + PROTO_HEADER_SIZE, PROTO_MAX_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fs_path_error(err, errno, q->path);
		if (n == 0)
			break;
		if (fs_reply_data(r, frame, (size_t)n, err) < 0)
			return -1;
	}
	struct proto_msg end = { .type = PROTO_EXIT, .u.code = 0 };
	return fs_reply_send(r, &end, err);
}
