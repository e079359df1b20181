#include "guest/fs_child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "guest/fs_ops.h"

#define FS_CHILD_READ (64u * 1024u)
#define FS_CHILD_PIECES 8

bool fs_child_serves(uint8_t type)
{
	return type >= PROTO_FS_LS && type <= PROTO_FS_READ;
}

int fs_child_start(struct fs_child *c, const struct proto_msg *m, sbx_error_t *err)
{
	memset(c, 0, sizeof(*c));
	c->stream = m->stream;
	c->fd = -1;
	proto_reader_init(&c->rd);
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return sbx_error_errno(err, errno, "fs pipe");
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return sbx_error_errno(err, e, "fork for %s", proto_type_name(m->type));
	}
	if (pid == 0) {
		/* Keep only stdio and the pipe: the operation must not hold
		 * other processes' pipes (their EOF) or the control port. */
		int fd = p[1];
		if (fd != 3 && dup2(fd, 3) == 3)
			fd = 3;
		close_range((unsigned)fd + 1, ~0u, 0);
		signal(SIGPIPE, SIG_IGN);
		fs_ops_run(m, fd);
		_exit(0);
	}
	close(p[1]);
	int fl = fcntl(p[0], F_GETFL);
	if (fl < 0 || fcntl(p[0], F_SETFL, fl | O_NONBLOCK) < 0) {
		int e = errno;
		close(p[0]);
		kill(pid, SIGKILL);
		return sbx_error_errno(err, e, "fs pipe flags");
	}
	c->pid = pid;
	c->fd = p[0];
	return 0;
}

/* Bytes of a frame the reader holds but has not completed. */
static size_t partial(const struct fs_child *c)
{
	const struct proto_reader *r = &c->rd;
	if (r->hdr_have == PROTO_HEADER_SIZE && r->payload_have == r->h.length)
		return 0;
	return r->hdr_have + r->payload_have;
}

bool fs_child_paused(const struct fs_child *c)
{
	return c->unacked + partial(c) >= PROTO_WINDOW;
}

int fs_child_credit(struct fs_child *c, uint32_t n)
{
	if (n > c->unacked)
		return -1;
	c->unacked -= n;
	return 0;
}

static void emit_error(struct fs_child *c, fs_child_emit_fn emit, void *ctx, int errnum, const char *msg)
{
	struct proto_msg m = { .stream = c->stream, .type = PROTO_FS_ERROR };
	m.u.fs_error.errnum = errnum;
	m.u.fs_error.message = (char *)msg;
	emit(ctx, &m);
}

static bool is_last(uint8_t type)
{
	return type == PROTO_FS_DONE || type == PROTO_FS_ERROR || type == PROTO_EXIT;
}

enum piece { PIECE_NONE, PIECE_SOME, PIECE_FRAME, PIECE_EOF, PIECE_BAD };

/* Reads the next piece of the pipe: a payload's bytes straight into the
 * reader (a file's bytes are copied once on their way to the output
 * queue), else just what the next header lacks; never more than room. */
static enum piece read_piece(struct fs_child *c, size_t room, struct proto_header *h, const uint8_t **payload)
{
	size_t want;
	uint8_t *in_place = proto_reader_room(&c->rd, &want);
	uint8_t hdr[PROTO_HEADER_SIZE];
	if (in_place == NULL)
		want = PROTO_HEADER_SIZE - (c->rd.hdr_have < PROTO_HEADER_SIZE ? c->rd.hdr_have : 0);
	if (want > room)
		want = room;
	ssize_t n = read(c->fd, in_place != NULL ? in_place : hdr, want);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return PIECE_NONE;
	if (n <= 0)
		return PIECE_EOF;
	if (in_place != NULL)
		return proto_reader_filled(&c->rd, (size_t)n, h, payload) == 1 ? PIECE_FRAME : PIECE_SOME;
	size_t used;
	sbx_error_t err = NULL;
	int rc = proto_reader_feed(&c->rd, hdr, (size_t)n, &used, h, payload, &err);
	sbx_error_free(&err);
	return rc < 0 ? PIECE_BAD : rc == 1 ? PIECE_FRAME : PIECE_SOME;
}

int fs_child_pump(struct fs_child *c, fs_child_emit_fn emit, void *ctx)
{
	/* A few pieces per call (a header, then its payload): the window
	 * bounds what they add to the output queue. */
	for (int i = 0; i < FS_CHILD_PIECES; i++) {
		/* Whatever is read may be data: never read past the window. */
		size_t room = PROTO_WINDOW - c->unacked - partial(c);
		if (room > FS_CHILD_READ)
			room = FS_CHILD_READ;
		if (room == 0 || room > PROTO_WINDOW)
			return 0;
		struct proto_header h;
		const uint8_t *payload;
		enum piece p = read_piece(c, room, &h, &payload);
		if (p == PIECE_NONE)
			return 0;
		if (p == PIECE_EOF) {
			emit_error(c, emit, ctx, EIO, "fs operation ended without a result");
			return 1;
		}
		if (p == PIECE_SOME)
			continue;
		struct proto_msg m;
		sbx_error_t err = NULL;
		if (p == PIECE_BAD || h.stream != c->stream || proto_msg_decode(&h, payload, &m, &err) < 0) {
			/* only a bug of ours gets here: end the stream cleanly */
			emit_error(c, emit, ctx, EIO, "fs operation sent a malformed result");
			sbx_error_free(&err);
			return 1;
		}
		if (m.type == PROTO_STDOUT)
			c->unacked += (uint32_t)m.u.data.len;
		emit(ctx, &m);
		bool last = is_last(m.type);
		proto_msg_free(&m);
		if (last)
			return 1;
	}
	return 0;
}

void fs_child_stop(struct fs_child *c)
{
	if (c->pid > 0)
		kill(c->pid, SIGKILL);
	c->pid = 0;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	proto_reader_free(&c->rd);
}
