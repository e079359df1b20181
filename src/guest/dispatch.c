/* The guest's protocol server (see dispatch.h): the epoll loop and the
 * one lookup of streams (the connection and the table's upkeep are in
 * dispatch_server.c).  The kinds of stream live in dispatch_proc.c,
 * dispatch_pty.c and dispatch_fs.c; they are opened by message type and found by one
 * lookup, and a stream id already in use is refused in one place. */
#include "guest/dispatch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "guest/clock_rng.h"
#include "guest/dispatch_internal.h"
#include "guest/fs_child.h"

#define PORT_READS 32

/* The live stream with this id, of any kind. */
static struct stream *stream_find(struct server *s, uint32_t id)
{
	for (size_t i = 0; i < s->nstreams; i++)
		if (!s->streams[i]->dead && s->streams[i]->id == id)
			return s->streams[i];
	return NULL;
}

/* Frees the streams that ended since the last sweep. */
static void sweep(struct server *s)
{
	size_t j = 0;
	for (size_t i = 0; i < s->nstreams; i++) {
		struct stream *st = s->streams[i];
		if (st->dead)
			st->ops->destroy(st);
		else
			s->streams[j++] = st;
	}
	s->nstreams = j;
}

struct opener {
	uint8_t type;
	const char *name; /* in "<name> on a stream already in use" */
	void (*open)(struct server *s, struct proto_msg *m);
};

static const struct opener openers[] = {
	{ PROTO_SPAWN, "SPAWN", srv_proc_open },
	{ PROTO_SPAWN_PTY, "SPAWN_PTY", srv_pty_open },
	{ PROTO_FS_WRITE, "FS_WRITE", srv_fs_write_stream_open },
};
static const struct opener fs_op_opener = { 0, "fs request", srv_fs_op_open };

static const struct opener *find_opener(uint8_t type)
{
	for (size_t i = 0; i < sizeof(openers) / sizeof(openers[0]); i++)
		if (openers[i].type == type)
			return &openers[i];
	return fs_child_serves(type) ? &fs_op_opener : NULL;
}

static void handle_stream_msg(struct server *s, struct proto_msg *m)
{
	struct stream *st = stream_find(s, m->stream);
	const struct opener *op = find_opener(m->type);
	if (op != NULL && st != NULL) {
		char msg[64];
		snprintf(msg, sizeof(msg), "%s on a stream already in use", op->name);
		st->ops->fail(s, st, EBUSY, msg);
	} else if (op != NULL) {
		op->open(s, m);
	} else if (st != NULL) {
		st->ops->msg(s, st, m);
	} else if (m->type != PROTO_STDIN && m->type != PROTO_STDIN_EOF && m->type != PROTO_CREDIT &&
		   m->type != PROTO_KILL && m->type != PROTO_RESIZE) {
		/* Late STDIN, STDIN_EOF, CREDIT, KILL and RESIZE for a stream
		 * that already ended are normal; anything else is not. */
		srv_push_error(s, m->stream, PROTO_TEXT_UNEXPECTED " from the host");
	}
}

static void handle_vm_msg(struct server *s, struct proto_msg *m)
{
	if (m->type == PROTO_PING) {
		struct proto_msg pong = { .stream = 0, .type = PROTO_PONG, .u.nonce = m->u.nonce };
		srv_push(s, &pong);
	} else if (m->type == PROTO_SHUTDOWN) {
		s->stop = STOP_SHUTDOWN;
	} else if (m->type == PROTO_RESUMED) {
		/* No reply: a failure costs the clock or the reseed, not the
		 * VM, and is said on the console. */
		sbx_error_t err = NULL;
		if (guest_set_clock(m->u.resumed.realtime_ns, &err) < 0 ||
		    guest_seed_rng(m->u.resumed.entropy, m->u.resumed.entropy_len, &err) < 0)
			sbx_warn("resumed: %s", sbx_error_msg(err));
		sbx_error_free(&err);
	} else {
		srv_push_error(s, 0, "unexpected message on stream 0");
	}
}

static void handle_frame(struct server *s, const struct proto_header *h, const uint8_t *payload)
{
	struct proto_msg m;
	sbx_error_t err = NULL;
	if (proto_msg_decode(h, payload, &m, &err) < 0) {
		struct stream *st = h->stream != 0 ? stream_find(s, h->stream) : NULL;
		if (st != NULL)
			st->ops->fail(s, st, EPROTO, sbx_error_msg(err));
		else
			srv_push_error(s, h->stream, sbx_error_msg(err));
		sbx_error_free(&err);
		return;
	}
	if (m.stream == 0)
		handle_vm_msg(s, &m);
	else
		handle_stream_msg(s, &m);
	proto_msg_free(&m);
}

/* One read of the port: the rest of a frame's payload straight into the
 * reader (no copy of the host's file bytes on their way in), else a
 * buffer of frames fed to it.  Returns 1 when more may follow. */
static int read_port_once(struct server *s)
{
	uint8_t buf[64 * 1024];
	size_t want;
	uint8_t *in_place = proto_reader_room(&s->reader, &want);
	ssize_t n = read(s->port, in_place != NULL ? in_place : buf, in_place != NULL ? want : sizeof(buf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n < 0) {
		sbx_error_t e = NULL;
		sbx_error_errno(&e, errno, "read control port");
		srv_conn_fail(s, &e);
		return 0;
	}
	if (n == 0) {
		s->stop = STOP_CLOSED;
		return 0;
	}
	struct proto_header h;
	const uint8_t *payload;
	if (in_place != NULL) {
		if (proto_reader_filled(&s->reader, (size_t)n, &h, &payload) == 1)
			handle_frame(s, &h, payload);
		return 1;
	}
	size_t off = 0;
	while (off < (size_t)n && s->stop == RUNNING) {
		size_t used;
		sbx_error_t err = NULL;
		int rc = proto_reader_feed(&s->reader, buf + off, (size_t)n - off, &used, &h, &payload, &err);
		off += used;
		if (rc < 0) {
			sbx_error_prefix(&err, "framing error");
			srv_conn_fail(s, &err);
			return 0;
		}
		if (rc == 1)
			handle_frame(s, &h, payload);
	}
	return 1;
}

/* The host's bytes arrive in buffers of a page: reading several per turn
 * of the loop spares an epoll_wait each, as long as the output queue (the
 * answers they cause) has room. */
static void read_port(struct server *s)
{
	for (int i = 0; i < PORT_READS && s->stop == RUNNING && !outq_full(&s->q); i++)
		if (read_port_once(s) == 0)
			return;
}

static void reap(struct server *s)
{
	struct signalfd_siginfo si;
	while (read(s->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		;
	for (;;) {
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);
		if (pid <= 0)
			return;
		/* A reaped pid may be reused: never signal it again. */
		for (size_t i = 0; i < s->nstreams; i++)
			if (s->streams[i]->ops->reaped != NULL)
				s->streams[i]->ops->reaped(s, s->streams[i], pid, st);
	}
}

/* Ends drains that went quiet; returns the epoll timeout to the next one. */
static int check_deadlines(struct server *s)
{
	int64_t now = sbx_now_ms(), next = -1;
	for (size_t i = 0; i < s->nstreams; i++) {
		struct stream *st = s->streams[i];
		int64_t left = st->ops->tick != NULL ? st->ops->tick(s, st, now) : -1;
		if (left >= 0 && (next < 0 || left < next))
			next = left;
	}
	return (int)next;
}

static int update_interest(struct server *s, sbx_error_t *err)
{
	int full = outq_full(&s->q);
	if (srv_watch_set(s, &s->port_w, (full ? 0 : EPOLLIN) | (s->q.len > 0 ? EPOLLOUT : 0), err) < 0)
		return -1;
	for (size_t i = 0; i < s->nstreams; i++) {
		struct stream *st = s->streams[i];
		if (!st->dead && st->ops->interest != NULL && st->ops->interest(s, st, err) < 0)
			return -1;
	}
	return 0;
}

static void dispatch_event(struct server *s, struct watch *w, uint32_t events)
{
	switch (w->kind) {
	case W_PORT:
		if (events & EPOLLOUT) {
			sbx_error_t err = NULL;
			if (outq_flush(&s->q, s->port, &err) < 0) {
				srv_conn_fail(s, &err);
				return;
			}
		}
		if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
			read_port(s);
		break;
	case W_SIGNAL:
		reap(s);
		break;
	default:
		if (!w->st->dead && w->fd >= 0)
			w->st->ops->event(s, w->st, w);
		break;
	}
}

static int serve_loop(struct server *s, sbx_error_t *err)
{
	struct epoll_event evs[64];
	while (s->stop == RUNNING) {
		int timeout = check_deadlines(s);
		sweep(s);
		if (outq_flush(&s->q, s->port, err) < 0)
			return -1;
		if (update_interest(s, err) < 0)
			return -1;
		int n = epoll_wait(s->epfd, evs, 64, timeout);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sbx_error_errno(err, errno, "epoll_wait");
		for (int i = 0; i < n && s->stop == RUNNING; i++)
			dispatch_event(s, evs[i].data.ptr, evs[i].events);
	}
	if (s->stop == STOP_FAILED) {
		*err = s->failure;
		s->failure = NULL;
		return -1;
	}
	if (s->stop == STOP_SHUTDOWN) {
		/* Best effort: say what is already queued before going. */
		sbx_error_t ignored = NULL;
		outq_flush(&s->q, s->port, &ignored);
		sbx_error_free(&ignored);
		return 0;
	}
	return 1;
}

int dispatch_serve(int fd, const struct dispatch_config *cfg, sbx_error_t *err)
{
	struct server s = { .port = fd, .epfd = -1, .sigfd = -1, .cfg = cfg };
	proto_reader_init(&s.reader);
	outq_init(&s.q);
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	int rc = -1;
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR || sigprocmask(SIG_BLOCK, &chld, NULL) < 0) {
		sbx_error_errno(err, errno, "signals");
		goto out;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		sbx_error_errno(err, errno, "control port flags");
		goto out;
	}
	s.sigfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
	s.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s.sigfd < 0 || s.epfd < 0) {
		sbx_error_errno(err, errno, "signalfd/epoll");
		goto out;
	}
	s.port_w = (struct watch){ W_PORT, NULL, fd, 0 };
	s.sig_w = (struct watch){ W_SIGNAL, NULL, s.sigfd, 0 };
	if (srv_watch_set(&s, &s.sig_w, EPOLLIN, err) < 0)
		goto out;
	reap(&s); /* children that ended before the signalfd existed */
	rc = serve_loop(&s, err);
out:
	for (size_t i = 0; i < s.nstreams; i++)
		if (!s.streams[i]->dead)
			s.streams[i]->ops->stop(&s, s.streams[i]);
	sweep(&s);
	free(s.streams);
	if (s.sigfd >= 0)
		close(s.sigfd);
	if (s.epfd >= 0)
		close(s.epfd);
	proto_reader_free(&s.reader);
	outq_free(&s.q);
	sbx_error_free(&s.failure);
	return rc;
}
