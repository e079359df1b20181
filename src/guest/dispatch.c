/* The guest's protocol server (see dispatch.h). */
#include "guest/dispatch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/log.h"
#include "guest/fs_child.h"
#include "guest/fs_write.h"
#include "guest/outq.h"
#include "guest/spawn.h"
#include "proto/proto_msg.h"
#include "proto/proto_reader.h"

enum watch_kind { W_PORT, W_SIGNAL, W_STDOUT, W_STDERR, W_STDIN, W_FS };

struct proc;
struct fsop;
struct watch {
	enum watch_kind kind;
	struct proc *p;
	struct fsop *o; /* W_FS */
	int fd;
	uint32_t events; /* currently registered; 0 = not in the epoll set */
};

struct proc {
	uint32_t stream;
	pid_t pid; /* and process group */
	int want_stdin;
	struct watch out, err, in;
	uint32_t unacked;   /* STDOUT+STDERR bytes not yet credited by the host */
	uint8_t *in_buf;    /* STDIN received, not yet written to the child */
	size_t in_len;
	int in_eof;         /* STDIN_EOF received */
	int exited, code;
	int64_t drain_deadline;
	int dead;           /* ended: freed at the end of the loop step */
};

/* A PROTO_FS_WRITE in progress. */
struct fs_stream {
	uint32_t stream;
	struct fs_write *w;
};

/* An fs operation served by a child (fs_child.h). */
struct fsop {
	struct fs_child c;
	struct watch w; /* the child's result pipe */
	int dead;
};

struct server {
	int port, epfd, sigfd;
	const struct dispatch_config *cfg;
	struct watch port_w, sig_w;
	struct proto_reader reader;
	struct outq q;
	struct proc *procs[DISPATCH_MAX_PROCS];
	size_t nprocs;
	struct fs_stream fsw[DISPATCH_MAX_FS_WRITES];
	size_t nfsw;
	struct fsop *fsops[DISPATCH_MAX_FS_OPS];
	size_t nfsops;
	enum { RUNNING, STOP_SHUTDOWN, STOP_CLOSED, STOP_FAILED } stop;
	sbx_error_t failure; /* with STOP_FAILED */
};

/* Ends the connection: framing and I/O errors cannot be confined to a
 * stream. */
static void conn_fail(struct server *s, sbx_error_t *e)
{
	sbx_err("guest: control connection: %s", sbx_error_msg(*e));
	if (s->stop == RUNNING) {
		s->stop = STOP_FAILED;
		s->failure = *e;
		*e = NULL;
	}
	sbx_error_free(e);
}

/* Registers, changes or removes (events == 0) a watch in the epoll set.
 * Paused fds leave the set entirely: a hung-up pipe would otherwise report
 * EPOLLHUP on every wait. */
static int watch_set(struct server *s, struct watch *w, uint32_t events, sbx_error_t *err)
{
	if (w->fd < 0 || w->events == events)
		return 0;
	struct epoll_event ev = { .events = events, .data.ptr = w };
	int op = w->events == 0 ? EPOLL_CTL_ADD : events == 0 ? EPOLL_CTL_DEL : EPOLL_CTL_MOD;
	if (epoll_ctl(s->epfd, op, w->fd, &ev) < 0)
		return sbx_error_errno(err, errno, "epoll_ctl");
	w->events = events;
	return 0;
}

static void watch_close(struct server *s, struct watch *w)
{
	if (w->fd < 0)
		return;
	sbx_error_t ignored = NULL;
	watch_set(s, w, 0, &ignored);
	sbx_error_free(&ignored);
	close(w->fd);
	w->fd = -1;
}

static int push(struct server *s, const struct proto_msg *m)
{
	sbx_error_t err = NULL;
	if (outq_push(&s->q, m, &err) < 0) {
		/* Out of memory or an unencodable message: the connection can
		 * no longer be trusted to carry complete streams. */
		conn_fail(s, &err);
		return -1;
	}
	return 0;
}

static void push_error(struct server *s, uint32_t stream, const char *msg)
{
	struct proto_msg m = { .stream = stream, .type = PROTO_ERROR, .u.message = (char *)msg };
	push(s, &m);
}

static struct proc *find_stream(struct server *s, uint32_t stream)
{
	for (size_t i = 0; i < s->nprocs; i++)
		if (!s->procs[i]->dead && s->procs[i]->stream == stream)
			return s->procs[i];
	return NULL;
}

static void proc_kill(struct proc *p, int sig)
{
	if (kill(-p->pid, sig) < 0 && errno != ESRCH)
		sbx_warn("guest: kill group %d: %s", (int)p->pid, strerror(errno));
}

static void proc_end(struct server *s, struct proc *p)
{
	watch_close(s, &p->out);
	watch_close(s, &p->err);
	watch_close(s, &p->in);
	p->dead = 1;
}

/* A protocol error on a stream: the process goes, the host hears why. */
static void proc_fail(struct server *s, struct proc *p, const char *msg)
{
	proc_kill(p, SIGKILL);
	proc_end(s, p);
	push_error(s, p->stream, msg);
}

static void proc_try_finish(struct server *s, struct proc *p)
{
	if (p->dead || !p->exited || p->out.fd >= 0 || p->err.fd >= 0)
		return;
	struct proto_msg m = { .stream = p->stream, .type = PROTO_EXIT, .u.code = p->code };
	proc_end(s, p);
	push(s, &m);
}

static void credit_host(struct server *s, struct proc *p, size_t n)
{
	if (n == 0)
		return;
	struct proto_msg m = { .stream = p->stream, .type = PROTO_CREDIT, .u.credit = (uint32_t)n };
	push(s, &m);
}

/* Writes buffered STDIN to the child; what the child can no longer take is
 * dropped but still credited, so the host never stalls on a dead reader. */
static void proc_write_stdin(struct server *s, struct proc *p)
{
	while (p->in.fd >= 0 && p->in_len > 0) {
		ssize_t n = write(p->in.fd, p->in_buf, p->in_len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0) {
			watch_close(s, &p->in);
			break;
		}
		memmove(p->in_buf, p->in_buf + n, p->in_len - (size_t)n);
		p->in_len -= (size_t)n;
		credit_host(s, p, (size_t)n);
	}
	if (p->in.fd < 0) {
		credit_host(s, p, p->in_len);
		p->in_len = 0;
	} else if (p->in_eof && p->in_len == 0) {
		watch_close(s, &p->in);
	}
}

static void proc_read_pipe(struct server *s, struct proc *p, struct watch *w)
{
	uint8_t buf[PROTO_MAX_CHUNK];
	size_t room = PROTO_WINDOW - p->unacked;
	if (room > sizeof(buf))
		room = sizeof(buf);
	if (room == 0)
		return;
	ssize_t n = read(w->fd, buf, room);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		watch_close(s, w);
		proc_try_finish(s, p);
		return;
	}
	struct proto_msg m = { .stream = p->stream, .type = w->kind == W_STDOUT ? PROTO_STDOUT : PROTO_STDERR };
	m.u.data = (struct proto_data){ buf, (size_t)n };
	p->unacked += (uint32_t)n;
	if (p->exited)
		p->drain_deadline = sbx_now_ms() + DISPATCH_DRAIN_MS;
	push(s, &m);
}

static void handle_spawn(struct server *s, struct proto_msg *m)
{
	struct proc *old = find_stream(s, m->stream);
	if (old != NULL) {
		proc_fail(s, old, "SPAWN on a stream already in use");
		return;
	}
	if (s->nprocs >= DISPATCH_MAX_PROCS) {
		push_error(s, m->stream, "too many processes");
		return;
	}
	struct proc *p = calloc(1, sizeof(*p));
	if (p == NULL) {
		push_error(s, m->stream, "out of memory");
		return;
	}
	struct spawn_req req = {
		.argv = m->u.spawn.argv,
		.boot_env = s->cfg->boot_env,
		.env = m->u.spawn.env,
		.cwd = m->u.spawn.cwd,
		.want_stdin = (m->u.spawn.flags & PROTO_SPAWN_STDIN) != 0,
		.cgroup_procs_fd = s->cfg->cgroup_procs_fd,
		.user = s->cfg->user,
	};
	struct spawn_result res;
	sbx_error_t err = NULL;
	if (spawn_process(&req, &res, &err) < 0) {
		push_error(s, m->stream, sbx_error_msg(err));
		sbx_error_free(&err);
		free(p);
		return;
	}
	p->stream = m->stream;
	p->pid = res.pid;
	p->want_stdin = req.want_stdin;
	p->out = (struct watch){ W_STDOUT, p, NULL, res.stdout_fd, 0 };
	p->err = (struct watch){ W_STDERR, p, NULL, res.stderr_fd, 0 };
	p->in = (struct watch){ W_STDIN, p, NULL, res.stdin_fd, 0 };
	s->procs[s->nprocs++] = p;
	struct proto_msg started = { .stream = p->stream, .type = PROTO_STARTED, .u.pid = (uint32_t)p->pid };
	push(s, &started);
	if (res.exec_errno != 0) {
		const char *line = res.failure != NULL ? res.failure : "exec: failed\n";
		struct proto_msg e = { .stream = p->stream, .type = PROTO_STDERR };
		e.u.data = (struct proto_data){ (const uint8_t *)line, strlen(line) };
		p->unacked += (uint32_t)e.u.data.len;
		push(s, &e);
		free(res.failure);
	}
}

static void handle_stdin(struct server *s, struct proc *p, const struct proto_data *d)
{
	if (!p->want_stdin || p->in_eof) {
		proc_fail(s, p, p->in_eof ? "STDIN after STDIN_EOF" : "STDIN without PROTO_SPAWN_STDIN");
		return;
	}
	if (p->in.fd < 0) { /* the child closed its stdin: drop, but credit */
		credit_host(s, p, d->len);
		return;
	}
	if (d->len > PROTO_WINDOW - p->in_len) {
		proc_fail(s, p, "STDIN beyond the credit window");
		return;
	}
	if (p->in_buf == NULL) {
		p->in_buf = malloc(PROTO_WINDOW);
		if (p->in_buf == NULL) {
			proc_fail(s, p, "out of memory");
			return;
		}
	}
	memcpy(p->in_buf + p->in_len, d->data, d->len);
	p->in_len += d->len;
	proc_write_stdin(s, p);
}

static struct fs_stream *find_fs(struct server *s, uint32_t stream)
{
	for (size_t i = 0; i < s->nfsw; i++)
		if (s->fsw[i].stream == stream)
			return &s->fsw[i];
	return NULL;
}

/* Ends an fs stream: EXIT 0 when `e` is NULL, else FS_ERROR with its errno. */
static void fs_end(struct server *s, struct fs_stream *f, sbx_error_t *e)
{
	uint32_t stream = f->stream;
	*f = s->fsw[--s->nfsw];
	struct proto_msg m = { .stream = stream, .type = PROTO_EXIT, .u.code = 0 };
	if (e != NULL && *e != NULL) {
		m.type = PROTO_FS_ERROR;
		m.u.fs_error.errnum = (*e)->errnum > 0 ? (*e)->errnum : EIO;
		m.u.fs_error.message = (char *)sbx_error_msg(*e);
	}
	push(s, &m);
	if (e != NULL)
		sbx_error_free(e);
}

static void handle_fs_write(struct server *s, struct proto_msg *m)
{
	struct proc *p = find_stream(s, m->stream);
	struct fs_stream *old = find_fs(s, m->stream);
	sbx_error_t err = NULL;
	if (p != NULL) {
		proc_fail(s, p, "FS_WRITE on a stream already in use");
		return;
	}
	if (old != NULL) {
		fs_write_abort(old->w);
		sbx_error_set(&err, EBUSY, "FS_WRITE on a stream already in use");
		fs_end(s, old, &err);
		return;
	}
	if (s->nfsw >= DISPATCH_MAX_FS_WRITES) {
		push_error(s, m->stream, "too many file writes");
		return;
	}
	struct fs_stream *f = &s->fsw[s->nfsw++];
	f->stream = m->stream;
	f->w = fs_write_open(&m->u.fs_write, &err);
	if (f->w == NULL)
		fs_end(s, f, &err);
}

static void handle_fs_msg(struct server *s, struct fs_stream *f, struct proto_msg *m)
{
	sbx_error_t err = NULL;
	switch (m->type) {
	case PROTO_STDIN:
		if (fs_write_data(f->w, m->u.data.data, m->u.data.len, &err) < 0) {
			fs_write_abort(f->w);
			fs_end(s, f, &err);
		} else if (m->u.data.len > 0) {
			struct proto_msg c = { .stream = f->stream, .type = PROTO_CREDIT };
			c.u.credit = (uint32_t)m->u.data.len;
			push(s, &c);
		}
		break;
	case PROTO_STDIN_EOF:
		if (fs_write_finish(f->w, &err) < 0)
			fs_end(s, f, &err);
		else
			fs_end(s, f, NULL);
		break;
	case PROTO_KILL:
		fs_write_abort(f->w);
		sbx_error_set(&err, ECANCELED, "write cancelled");
		fs_end(s, f, &err);
		break;
	default:
		fs_write_abort(f->w);
		sbx_error_set(&err, EPROTO, "unexpected %s during a file write", proto_type_name(m->type));
		fs_end(s, f, &err);
		break;
	}
}

static struct fsop *find_fsop(struct server *s, uint32_t stream)
{
	for (size_t i = 0; i < s->nfsops; i++)
		if (!s->fsops[i]->dead && s->fsops[i]->c.stream == stream)
			return s->fsops[i];
	return NULL;
}

static void fsop_end(struct server *s, struct fsop *o)
{
	watch_close(s, &o->w);
	o->c.fd = -1; /* closed with the watch */
	fs_child_stop(&o->c);
	o->dead = 1;
}

/* Ends an fs operation early: the child is killed, the host hears why. */
static void fsop_cancel(struct server *s, struct fsop *o, int errnum, const char *msg)
{
	struct proto_msg m = { .stream = o->c.stream, .type = PROTO_FS_ERROR };
	m.u.fs_error.errnum = errnum;
	m.u.fs_error.message = (char *)msg;
	fsop_end(s, o);
	push(s, &m);
}

static void fsop_emit(void *ctx, const struct proto_msg *m)
{
	push(ctx, m);
}

static void fsop_pump(struct server *s, struct fsop *o)
{
	if (fs_child_pump(&o->c, fsop_emit, s) == 1)
		fsop_end(s, o);
}

static void handle_fs_op(struct server *s, struct proto_msg *m)
{
	struct proc *p = find_stream(s, m->stream);
	struct fs_stream *w = find_fs(s, m->stream);
	if (p != NULL || w != NULL) {
		if (p != NULL) {
			proc_fail(s, p, "fs request on a stream already in use");
		} else {
			sbx_error_t err = NULL;
			fs_write_abort(w->w);
			sbx_error_set(&err, EBUSY, "fs request on a stream already in use");
			fs_end(s, w, &err);
		}
		return;
	}
	if (s->nfsops >= DISPATCH_MAX_FS_OPS) {
		struct proto_msg e = { .stream = m->stream, .type = PROTO_FS_ERROR };
		e.u.fs_error.errnum = EAGAIN;
		e.u.fs_error.message = "too many fs operations in flight";
		push(s, &e);
		return;
	}
	struct fsop *o = calloc(1, sizeof(*o));
	sbx_error_t err = NULL;
	if (o == NULL || fs_child_start(&o->c, m, &err) < 0) {
		struct proto_msg e = { .stream = m->stream, .type = PROTO_FS_ERROR };
		e.u.fs_error.errnum = err != NULL && err->errnum > 0 ? err->errnum : ENOMEM;
		e.u.fs_error.message = (char *)(err != NULL ? sbx_error_msg(err) : "out of memory");
		push(s, &e);
		sbx_error_free(&err);
		free(o);
		return;
	}
	o->w = (struct watch){ W_FS, NULL, o, o->c.fd, 0 };
	s->fsops[s->nfsops++] = o;
}

/* Host messages on a stream an fs operation owns. */
static void handle_fsop_msg(struct server *s, struct fsop *o, struct proto_msg *m)
{
	if (m->type == PROTO_CREDIT) {
		if (fs_child_credit(&o->c, m->u.credit) < 0)
			fsop_cancel(s, o, EPROTO, "CREDIT for more than was sent");
	} else if (m->type == PROTO_KILL) {
		fsop_cancel(s, o, ECANCELED, "fs operation cancelled");
	} else {
		char msg[96];
		snprintf(msg, sizeof(msg), "unexpected %s during an fs operation", proto_type_name(m->type));
		fsop_cancel(s, o, EPROTO, msg);
	}
}

static void handle_stream_msg(struct server *s, struct proto_msg *m)
{
	struct fsop *o = find_fsop(s, m->stream);
	if (o != NULL) {
		handle_fsop_msg(s, o, m);
		return;
	}
	if (fs_child_serves(m->type)) {
		handle_fs_op(s, m);
		return;
	}
	if (m->type == PROTO_SPAWN) {
		handle_spawn(s, m);
		return;
	}
	if (m->type == PROTO_FS_WRITE) {
		handle_fs_write(s, m);
		return;
	}
	struct proc *p = find_stream(s, m->stream);
	struct fs_stream *f = p == NULL ? find_fs(s, m->stream) : NULL;
	if (f != NULL) {
		handle_fs_msg(s, f, m);
		return;
	}
	switch (m->type) {
	case PROTO_STDIN:
	case PROTO_STDIN_EOF:
	case PROTO_CREDIT:
	case PROTO_KILL:
		/* Late messages for a stream that already ended are normal. */
		if (p == NULL)
			return;
		break;
	default:
		if (p != NULL)
			proc_fail(s, p, PROTO_TEXT_UNEXPECTED " from the host");
		else
			push_error(s, m->stream, PROTO_TEXT_UNEXPECTED " from the host");
		return;
	}
	switch (m->type) {
	case PROTO_STDIN:
		handle_stdin(s, p, &m->u.data);
		break;
	case PROTO_STDIN_EOF:
		if (!p->want_stdin || p->in_eof) {
			proc_fail(s, p, "unexpected STDIN_EOF");
			break;
		}
		p->in_eof = 1;
		proc_write_stdin(s, p);
		break;
	case PROTO_CREDIT:
		if (m->u.credit > p->unacked) {
			proc_fail(s, p, "CREDIT for more than was sent");
			break;
		}
		p->unacked -= m->u.credit;
		break;
	case PROTO_KILL:
		proc_kill(p, (int)m->u.signal);
		break;
	}
}

static void handle_vm_msg(struct server *s, struct proto_msg *m)
{
	if (m->type == PROTO_PING) {
		struct proto_msg pong = { .stream = 0, .type = PROTO_PONG, .u.nonce = m->u.nonce };
		push(s, &pong);
	} else if (m->type == PROTO_SHUTDOWN) {
		s->stop = STOP_SHUTDOWN;
	} else {
		push_error(s, 0, "unexpected message on stream 0");
	}
}

static void handle_frame(struct server *s, const struct proto_header *h, const uint8_t *payload)
{
	struct proto_msg m;
	sbx_error_t err = NULL;
	if (proto_msg_decode(h, payload, &m, &err) < 0) {
		struct proc *p = h->stream != 0 ? find_stream(s, h->stream) : NULL;
		if (p != NULL)
			proc_fail(s, p, sbx_error_msg(err));
		else
			push_error(s, h->stream, sbx_error_msg(err));
		sbx_error_free(&err);
		return;
	}
	if (m.stream == 0)
		handle_vm_msg(s, &m);
	else
		handle_stream_msg(s, &m);
	proto_msg_free(&m);
}

static void read_port(struct server *s)
{
	uint8_t buf[64 * 1024];
	ssize_t n = read(s->port, buf, sizeof(buf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n < 0) {
		sbx_error_t e = NULL;
		sbx_error_errno(&e, errno, "read control port");
		conn_fail(s, &e);
		return;
	}
	if (n == 0) {
		s->stop = STOP_CLOSED;
		return;
	}
	size_t off = 0;
	while (off < (size_t)n && s->stop == RUNNING) {
		size_t used;
		struct proto_header h;
		const uint8_t *payload;
		sbx_error_t err = NULL;
		int rc = proto_reader_feed(&s->reader, buf + off, (size_t)n - off, &used, &h, &payload, &err);
		off += used;
		if (rc < 0) {
			sbx_error_prefix(&err, "framing error");
			conn_fail(s, &err);
			return;
		}
		if (rc == 1)
			handle_frame(s, &h, payload);
	}
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
		for (size_t i = 0; i < s->nfsops; i++)
			if (s->fsops[i]->c.pid == pid)
				s->fsops[i]->c.pid = 0;
		for (size_t i = 0; i < s->nprocs; i++) {
			struct proc *p = s->procs[i];
			if (p->dead || p->exited || p->pid != pid)
				continue;
			p->exited = 1;
			p->code = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
			p->drain_deadline = sbx_now_ms() + DISPATCH_DRAIN_MS;
			proc_try_finish(s, p);
		}
	}
}

static int output_paused(const struct server *s, const struct proc *p)
{
	return outq_full(&s->q) || p->unacked >= PROTO_WINDOW;
}

/* Ends drains that went quiet; returns the epoll timeout to the next one. */
static int check_deadlines(struct server *s)
{
	int64_t now = sbx_now_ms(), next = -1;
	for (size_t i = 0; i < s->nprocs; i++) {
		struct proc *p = s->procs[i];
		if (p->dead || !p->exited)
			continue;
		if (now >= p->drain_deadline) {
			if (output_paused(s, p)) {
				/* Output is waiting for the host, not for the
				 * child: keep it. */
				p->drain_deadline = now + DISPATCH_DRAIN_MS;
			} else {
				watch_close(s, &p->out);
				watch_close(s, &p->err);
				proc_try_finish(s, p);
				continue;
			}
		}
		if (next < 0 || p->drain_deadline - now < next)
			next = p->drain_deadline - now;
	}
	return (int)next;
}

static void sweep(struct server *s)
{
	size_t j = 0;
	for (size_t i = 0; i < s->nprocs; i++) {
		struct proc *p = s->procs[i];
		if (p->dead) {
			free(p->in_buf);
			free(p);
		} else {
			s->procs[j++] = p;
		}
	}
	s->nprocs = j;
	j = 0;
	for (size_t i = 0; i < s->nfsops; i++) {
		if (s->fsops[i]->dead)
			free(s->fsops[i]);
		else
			s->fsops[j++] = s->fsops[i];
	}
	s->nfsops = j;
}

static int update_interest(struct server *s, sbx_error_t *err)
{
	int full = outq_full(&s->q);
	if (watch_set(s, &s->port_w, (full ? 0 : EPOLLIN) | (s->q.len > 0 ? EPOLLOUT : 0), err) < 0)
		return -1;
	for (size_t i = 0; i < s->nprocs; i++) {
		struct proc *p = s->procs[i];
		uint32_t ev = output_paused(s, p) ? 0 : EPOLLIN;
		if (watch_set(s, &p->out, ev, err) < 0 || watch_set(s, &p->err, ev, err) < 0 ||
		    watch_set(s, &p->in, p->in_len > 0 ? EPOLLOUT : 0, err) < 0)
			return -1;
	}
	for (size_t i = 0; i < s->nfsops; i++) {
		struct fsop *o = s->fsops[i];
		if (!o->dead && watch_set(s, &o->w, full || fs_child_paused(&o->c) ? 0 : EPOLLIN, err) < 0)
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
				conn_fail(s, &err);
				return;
			}
		}
		if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
			read_port(s);
		break;
	case W_SIGNAL:
		reap(s);
		break;
	case W_STDOUT:
	case W_STDERR:
		if (!w->p->dead && w->fd >= 0)
			proc_read_pipe(s, w->p, w);
		break;
	case W_STDIN:
		if (!w->p->dead && w->fd >= 0)
			proc_write_stdin(s, w->p);
		break;
	case W_FS:
		if (!w->o->dead && w->fd >= 0)
			fsop_pump(s, w->o);
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
	s.port_w = (struct watch){ W_PORT, NULL, NULL, fd, 0 };
	s.sig_w = (struct watch){ W_SIGNAL, NULL, NULL, s.sigfd, 0 };
	if (watch_set(&s, &s.sig_w, EPOLLIN, err) < 0)
		goto out;
	reap(&s); /* children that ended before the signalfd existed */
	rc = serve_loop(&s, err);
out:
	for (size_t i = 0; i < s.nprocs; i++) {
		if (!s.procs[i]->dead)
			proc_kill(s.procs[i], SIGKILL);
		proc_end(&s, s.procs[i]);
	}
	sweep(&s);
	for (size_t i = 0; i < s.nfsw; i++)
		fs_write_abort(s.fsw[i].w);
	for (size_t i = 0; i < s.nfsops; i++)
		if (!s.fsops[i]->dead)
			fsop_end(&s, s.fsops[i]);
	sweep(&s);
	if (s.sigfd >= 0)
		close(s.sigfd);
	if (s.epfd >= 0)
		close(s.epfd);
	proto_reader_free(&s.reader);
	outq_free(&s.q);
	sbx_error_free(&s.failure);
	return rc;
}
