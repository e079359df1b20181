#include "guest/fs_child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "guest/fs_ops.h"

#define FS_CHILD_READ (64u * 1024u)

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

int fs_child_pump(struct fs_child *c, fs_child_emit_fn emit, void *ctx)
{
	static uint8_t buf[FS_CHILD_READ];
	/* Whatever is read may be data: never read past the window. */
	size_t room = PROTO_WINDOW - c->unacked - partial(c);
	if (room > sizeof(buf))
		room = sizeof(buf);
	if (room == 0 || room > PROTO_WINDOW)
		return 0;
	ssize_t n = read(c->fd, buf, room);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0) {
		emit_error(c, emit, ctx, EIO, "fs operation ended without a result");
		return 1;
	}
	for (size_t off = 0; off < (size_t)n;) {
		size_t used;
		struct proto_header h;
		const uint8_t *payload;
		sbx_error_t err = NULL;
		struct proto_msg m;
		int rc = proto_reader_feed(&c->rd, buf + off, (size_t)n - off, &used, &h, &payload, &err);
		off += used;
		if (rc == 1 && (h.stream != c->stream || proto_msg_decode(&h, payload, &m, &err) < 0))
			rc = -1;
		if (rc < 0) {
			/* only a bug of ours gets here: end the stream cleanly */
			emit_error(c, emit, ctx, EIO, "fs operation sent a malformed result");
			sbx_error_free(&err);
			return 1;
		}
		if (rc == 0)
			continue;
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
