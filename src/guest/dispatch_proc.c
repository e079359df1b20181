/* Process streams of the guest's protocol server: SPAWN, then STDIN,
 * STDIN_EOF, CREDIT and KILL from the host; STARTED, STDOUT, STDERR and
 * EXIT back, output under the CREDIT window. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "guest/dispatch_internal.h"
#include "guest/exec_cgroup.h"
#include "guest/spawn.h"

struct proc {
	struct stream st;
	pid_t pid; /* and process group */
	int want_stdin;
	struct watch out, err, in;
	uint32_t unacked;   /* STDOUT+STDERR bytes not yet credited by the host */
	uint8_t *in_buf;    /* STDIN received, not yet written to the child */
	size_t in_len;
	int in_eof;         /* STDIN_EOF received */
	int exited, code;
	int64_t drain_deadline;
	struct exec_cgroup cg;
	int cgroup_dir_fd;
};

static struct proc *as_proc(struct stream *st)
{
	return (struct proc *)st;
}

/* SIGKILL ends everything the exec started, its process group and what
 * left it; other signals go to the process group. */
static void proc_kill(struct proc *p, int sig)
{
	if (kill(-p->pid, sig) < 0 && errno != ESRCH)
		sbx_warn("guest: kill group %d: %s", (int)p->pid, strerror(errno));
	if (sig == SIGKILL)
		exec_cgroup_kill(p->cgroup_dir_fd, &p->cg);
}

static void proc_end(struct server *s, struct proc *p)
{
	srv_watch_close(s, &p->out);
	srv_watch_close(s, &p->err);
	srv_watch_close(s, &p->in);
	exec_cgroup_release(p->cgroup_dir_fd, &p->cg);
	srv_stream_end(s, &p->st);
}

/* A protocol error on a stream: the process goes, the host hears why. */
static void proc_fail(struct server *s, struct stream *st, int errnum, const char *msg)
{
	struct proc *p = as_proc(st);
	proc_kill(p, SIGKILL);
	proc_end(s, p);
	srv_push_error(s, p->st.id, msg);
}

static void proc_try_finish(struct server *s, struct proc *p)
{
	if (p->st.dead || !p->exited || p->out.fd >= 0 || p->err.fd >= 0)
		return;
	struct proto_msg m = { .stream = p->st.id, .type = PROTO_EXIT, .u.code = p->code };
	proc_end(s, p);
	srv_push(s, &m);
}

static void credit_host(struct server *s, struct proc *p, size_t n)
{
	if (n == 0)
		return;
	struct proto_msg m = { .stream = p->st.id, .type = PROTO_CREDIT, .u.credit = (uint32_t)n };
	srv_push(s, &m);
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
			srv_watch_close(s, &p->in);
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
		srv_watch_close(s, &p->in);
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
		srv_watch_close(s, w);
		proc_try_finish(s, p);
		return;
	}
	struct proto_msg m = { .stream = p->st.id, .type = w->kind == W_STDOUT ? PROTO_STDOUT : PROTO_STDERR };
	m.u.data = (struct proto_data){ buf, (size_t)n };
	p->unacked += (uint32_t)n;
	if (p->exited)
		p->drain_deadline = sbx_now_ms() + DISPATCH_DRAIN_MS;
	srv_push(s, &m);
}

static void proc_stdin(struct server *s, struct proc *p, const struct proto_data *d)
{
	if (!p->want_stdin || p->in_eof) {
		proc_fail(s, &p->st, EPROTO, p->in_eof ? "STDIN after STDIN_EOF" : "STDIN without PROTO_SPAWN_STDIN");
		return;
	}
	if (p->in.fd < 0) { /* the child closed its stdin: drop, but credit */
		credit_host(s, p, d->len);
		return;
	}
	if (d->len > PROTO_WINDOW - p->in_len) {
		proc_fail(s, &p->st, EPROTO, "STDIN beyond the credit window");
		return;
	}
	if (p->in_buf == NULL) {
		p->in_buf = malloc(PROTO_WINDOW);
		if (p->in_buf == NULL) {
			proc_fail(s, &p->st, ENOMEM, "out of memory");
			return;
		}
	}
	memcpy(p->in_buf + p->in_len, d->data, d->len);
	p->in_len += d->len;
	proc_write_stdin(s, p);
}

static void proc_msg(struct server *s, struct stream *st, struct proto_msg *m)
{
	struct proc *p = as_proc(st);
	switch (m->type) {
	case PROTO_STDIN:
		proc_stdin(s, p, &m->u.data);
		break;
	case PROTO_STDIN_EOF:
		if (!p->want_stdin || p->in_eof) {
			proc_fail(s, st, EPROTO, "unexpected STDIN_EOF");
			break;
		}
		p->in_eof = 1;
		proc_write_stdin(s, p);
		break;
	case PROTO_CREDIT:
		if (m->u.credit > p->unacked) {
			proc_fail(s, st, EPROTO, "CREDIT for more than was sent");
			break;
		}
		p->unacked -= m->u.credit;
		break;
	case PROTO_KILL:
		proc_kill(p, (int)m->u.signal);
		break;
	default:
		proc_fail(s, st, EPROTO, PROTO_TEXT_UNEXPECTED " from the host");
		break;
	}
}

static void proc_event(struct server *s, struct stream *st, struct watch *w)
{
	if (w->kind == W_STDIN)
		proc_write_stdin(s, as_proc(st));
	else
		proc_read_pipe(s, as_proc(st), w);
}

static bool output_paused(const struct server *s, const struct proc *p)
{
	return outq_full(&s->q) || p->unacked >= PROTO_WINDOW;
}

static int proc_interest(struct server *s, struct stream *st, sbx_error_t *err)
{
	struct proc *p = as_proc(st);
	uint32_t ev = output_paused(s, p) ? 0 : EPOLLIN;
	if (srv_watch_set(s, &p->out, ev, err) < 0)
		return -1;
	if (srv_watch_set(s, &p->err, ev, err) < 0)
		return -1;
	return srv_watch_set(s, &p->in, p->in_len > 0 ? EPOLLOUT : 0, err);
}

static void proc_reaped(struct server *s, struct stream *st, pid_t pid, int status)
{
	struct proc *p = as_proc(st);
	if (st->dead || p->exited || p->pid != pid)
		return;
	p->exited = 1;
	p->code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
	p->drain_deadline = sbx_now_ms() + DISPATCH_DRAIN_MS;
	proc_try_finish(s, p);
}

/* Ends a drain that went quiet. */
static int64_t proc_tick(struct server *s, struct stream *st, int64_t now)
{
	struct proc *p = as_proc(st);
	if (st->dead || !p->exited)
		return -1;
	if (now >= p->drain_deadline) {
		if (!output_paused(s, p)) {
			srv_watch_close(s, &p->out);
			srv_watch_close(s, &p->err);
			proc_try_finish(s, p);
			return -1;
		}
		/* Output is waiting for the host, not for the child: keep it. */
		p->drain_deadline = now + DISPATCH_DRAIN_MS;
	}
	return p->drain_deadline - now;
}

static void proc_stop(struct server *s, struct stream *st)
{
	proc_kill(as_proc(st), SIGKILL);
	proc_end(s, as_proc(st));
}

static void proc_destroy(struct stream *st)
{
	free(as_proc(st)->in_buf);
	free(st);
}

static const struct stream_ops proc_ops = {
	.msg = proc_msg,
	.fail = proc_fail,
	.event = proc_event,
	.interest = proc_interest,
	.reaped = proc_reaped,
	.tick = proc_tick,
	.stop = proc_stop,
	.destroy = proc_destroy,
};

/* Sends the exec failure the child reported as the first stderr line. */
static void proc_exec_failed(struct server *s, struct proc *p, char *failure)
{
	const char *line = failure != NULL ? failure : "exec: failed\n";
	struct proto_msg e = { .stream = p->st.id, .type = PROTO_STDERR };
	e.u.data = (struct proto_data){ (const uint8_t *)line, strlen(line) };
	p->unacked += (uint32_t)e.u.data.len;
	srv_push(s, &e);
	free(failure);
}

void srv_proc_open(struct server *s, struct proto_msg *m)
{
	if (s->live[STREAM_PROC] + s->live[STREAM_PTY] >= DISPATCH_MAX_PROCS) {
		srv_push_error(s, m->stream, "too many processes");
		return;
	}
	struct proc *p = calloc(1, sizeof(*p));
	if (p == NULL) {
		srv_push_error(s, m->stream, "out of memory");
		return;
	}
	p->cgroup_dir_fd = s->cfg->cgroup_dir_fd;
	cleanup_error sbx_error_t err = NULL;
	if (exec_cgroup_create(p->cgroup_dir_fd, s->cfg->exec_pids_max, &p->cg, &err) < 0) {
		srv_push_error(s, m->stream, sbx_error_msg(err));
		free(p);
		return;
	}
	struct spawn_req req = {
		.argv = m->u.spawn.argv,
		.boot_env = s->cfg->boot_env,
		.env = m->u.spawn.env,
		.cwd = m->u.spawn.cwd,
		.want_stdin = (m->u.spawn.flags & PROTO_SPAWN_STDIN) != 0,
		.cgroup_procs_fd = p->cg.procs_fd,
		.user = s->cfg->user,
	};
	struct spawn_result res;
	if (spawn_process(&req, &res, &err) < 0) {
		srv_push_error(s, m->stream, sbx_error_msg(err));
		exec_cgroup_release(p->cgroup_dir_fd, &p->cg);
		free(p);
		return;
	}
	p->st = (struct stream){ .id = m->stream, .kind = STREAM_PROC, .ops = &proc_ops };
	p->pid = res.pid;
	p->want_stdin = req.want_stdin;
	p->out = (struct watch){ W_STDOUT, &p->st, res.stdout_fd, 0 };
	p->err = (struct watch){ W_STDERR, &p->st, res.stderr_fd, 0 };
	p->in = (struct watch){ W_STDIN, &p->st, res.stdin_fd, 0 };
	if (srv_stream_add(s, &p->st) < 0) {
		proc_kill(p, SIGKILL);
		exec_cgroup_release(p->cgroup_dir_fd, &p->cg);
		srv_watch_close(s, &p->out);
		srv_watch_close(s, &p->err);
		srv_watch_close(s, &p->in);
		free(res.failure);
		free(p);
		srv_push_error(s, m->stream, "out of memory");
		return;
	}
	struct proto_msg started = { .stream = p->st.id, .type = PROTO_STARTED, .u.pid = (uint32_t)p->pid };
	srv_push(s, &started);
	if (res.exec_errno != 0)
		proc_exec_failed(s, p, res.failure);
}
