/* fs::read: FS_META, then the file's bytes as STDOUT chunks, then EXIT 0.
 * Chunks go to the result pipe with blocking writes, so the dispatcher's
 * CREDIT window bounds what is in flight and memory stays flat. */
#include "guest/fs_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "guest/fs_util.h"

/* Moves n bytes from one pipe to another, by reference. */
static int move_all(int from, int to, size_t n, sbx_error_t *err)
{
	while (n > 0) {
		ssize_t k = splice(from, NULL, to, NULL, n, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return sbx_error_errno(err, k < 0 ? errno : EIO, "splice into the result pipe");
		n -= (size_t)k;
	}
	return 0;
}

/* Sends the file's pages by reference (splice): each chunk goes to a pipe
 * of our own first, which tells its size for the frame header, then on to
 * the result pipe, so the guest copies each byte once (the dispatcher's
 * read) instead of three times.  Returns 1 once sent, 0 when the file
 * cannot be spliced (nothing sent: read it instead). */
static int send_spliced(int fd, const char *path, struct fs_reply *r, sbx_error_t *err)
{
	cleanup_fd_pair int p[2] = { -1, -1 };
	if (pipe2(p, O_CLOEXEC) < 0)
		return 0;
	for (bool first = true;; first = false) {
		ssize_t n = splice(fd, NULL, p[1], NULL, PROTO_MAX_CHUNK, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && first && errno == EINVAL)
			return 0;
		if (n < 0)
			return fs_path_error(err, errno, path);
		if (n == 0)
			return 1;
		if (fs_reply_data_header(r, (size_t)n, err) < 0 || move_all(p[0], r->fd, (size_t)n, err) < 0)
			return -1;
	}
}

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
	int spliced = send_spliced(fd, q->path, r, err);
	if (spliced < 0)
		return -1;
	/* Each chunk is read behind room for its frame header: sent as it is. */
	static uint8_t frame[PROTO_HEADER_SIZE + PROTO_MAX_CHUNK];
	while (spliced == 0) {
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
