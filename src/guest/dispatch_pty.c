/* Terminal streams of the guest's protocol server: SPAWN_PTY, then STDIN
 * (keys), STDIN_EOF, CREDIT, KILL and RESIZE from the host; STARTED,
 * STDOUT (the screen) and EXIT back, output under the CREDIT window.
 *
 * The terminal's master side is watched twice: for reading as `out`, and
 * through a dup as `in` for writing keys, since one epoll set takes a file
 * descriptor once but each watch has one direction.  The output ends when
 * the master reads EIO (every holder of the slave side closed it) or, once
 * the process exited, when the terminal stayed quiet for DISPATCH_DRAIN_MS
 * (a background process may keep the slave open). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "guest/dispatch_internal.h"
#include "guest/exec_cgroup.h"
#include "guest/spawn.h"

struct pty {
	struct stream st;
	pid_t pid; /* the session's leader and its first process group */
	struct watch out, in; /* the master side: read / written (a dup) */
	uint32_t unacked;     /* STDOUT bytes not yet credited by the host */
	uint8_t *in_buf;      /* keys received, not yet written to the terminal */
	size_t in_len;
	bool in_eof;          /* STDIN_EOF received: no more keys */
	bool exited;
	int code;
	int64_t drain_deadline;
	struct exec_cgroup cg;
	int cgroup_dir_fd;
};

static struct pty *as_pty(struct stream *st)
{
	return (struct pty *)st;
}

/* As for SPAWN: the process group; SIGKILL also the exec's cgroup. */
static void pty_kill(struct pty *t, int sig)
{
	if (kill(-t->pid, sig) < 0 && errno != ESRCH)
		sbx_warn("guest: kill group %d: %s", (int)t->pid, strerror(errno));
	if (sig == SIGKILL)
		exec_cgroup_kill(t->cgroup_dir_fd, &t->cg);
}

static void pty_end(struct server *s, struct pty *t)
{
	srv_watch_close(s, &t->out);
	srv_watch_close(s, &t->in);
	exec_cgroup_release(t->cgroup_dir_fd, &t->cg);
	srv_stream_end(s, &t->st);
}

static void pty_fail(struct server *s, struct stream *st, int errnum, const char *msg)
{
	(void)errnum;
	struct pty *t = as_pty(st);
	pty_kill(t, SIGKILL);
	pty_end(s, t);
	srv_push_error(s, t->st.id, msg);
}

static void pty_try_finish(struct server *s, struct pty *t)
{
	if (t->st.dead || !t->exited || t->out.fd >= 0)
		return;
	struct proto_msg m = { .stream = t->st.id, .type = PROTO_EXIT, .u.code = t->code };
	pty_end(s, t);
	srv_push(s, &m);
}

static void credit_host(struct server *s, struct pty *t, size_t n)
{
	if (n == 0)
		return;
	struct proto_msg m = { .stream = t->st.id, .type = PROTO_CREDIT, .u.credit = (uint32_t)n };
	srv_push(s, &m);
}

/* Writes buffered keys; once the terminal takes no more (EIO: the process
 * and every holder of the slave side are gone), keys are dropped but still
 * credited, so the host never stalls. */
static void pty_write_keys(struct server *s, struct pty *t)
{
	while (t->in.fd >= 0 && t->in_len > 0) {
		ssize_t n = write(t->in.fd, t->in_buf, t->in_len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0) {
			srv_watch_close(s, &t->in);
			break;
		}
		memmove(t->in_buf, t->in_buf + n, t->in_len - (size_t)n);
		t->in_len -= (size_t)n;
		credit_host(s, t, (size_t)n);
	}
	if (t->in.fd < 0) {
		credit_host(s, t, t->in_len);
		t->in_len = 0;
	}
}

static void pty_read_screen(struct server *s, struct pty *t)
{
	uint8_t buf[PROTO_MAX_CHUNK];
	size_t room = PROTO_WINDOW - t->unacked;
	if (room > sizeof(buf))
		room = sizeof(buf);
	if (room == 0)
		return;
	ssize_t n = read(t->out.fd, buf, room);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) { /* EIO: nobody holds the slave side any more */
		srv_watch_close(s, &t->out);
		pty_try_finish(s, t);
		return;
	}
	struct proto_msg m = { .stream = t->st.id, .type = PROTO_STDOUT };
	m.u.data = (struct proto_data){ buf, (size_t)n };
	t->unacked += (uint32_t)n;
	if (t->exited)
		t->drain_deadline = sbx_now_ms() + DISPATCH_DRAIN_MS;
	srv_push(s, &m);
}

static void pty_keys(struct server *s, struct pty *t, const struct proto_data *d)
{
	if (t->in_eof) {
		pty_fail(s, &t->st, EPROTO, "STDIN after STDIN_EOF");
		return;
	}
	if (t->in.fd < 0) { /* the terminal is gone: drop, but credit */
		credit_host(s, t, d->len);
		return;
	}
	if (d->len > PROTO_WINDOW - t->in_len) {
		pty_fail(s, &t->st, EPROTO, "STDIN beyond the credit window");
		return;
	}
	if (t->in_buf == NULL && (t->in_buf = malloc(PROTO_WINDOW)) == NULL) {
		pty_fail(s, &t->st, ENOMEM, "out of memory");
		return;
	}
	memcpy(t->in_buf + t->in_len, d->data, d->len);
	t->in_len += d->len;
	pty_write_keys(s, t);
}

/* The kernel sends SIGWINCH to the terminal's foreground process group. */
static void pty_resize(struct pty *t, const struct proto_winsize *w)
{
	struct winsize ws = { .ws_row = (unsigned short)w->rows, .ws_col = (unsigned short)w->cols };
	if (t->out.fd >= 0 && ioctl(t->out.fd, TIOCSWINSZ, &ws) < 0)
		sbx_warn("guest: resize terminal of %d: %s", (int)t->pid, strerror(errno));
}

static void pty_msg(struct server *s, struct stream *st, struct proto_msg *m)
{
	struct pty *t = as_pty(st);
	switch (m->type) {
	case PROTO_STDIN:
		pty_keys(s, t, &m->u.data);
		break;
	case PROTO_STDIN_EOF: /* writes nothing: the terminal ends with its process */
		if (t->in_eof)
			pty_fail(s, st, EPROTO, "unexpected STDIN_EOF");
		else
			t->in_eof = true;
		break;
	case PROTO_CREDIT:
		if (m->u.credit > t->unacked) {
			pty_fail(s, st, EPROTO, "CREDIT for more than was sent");
			break;
		}
		t->unacked -= m->u.credit;
		break;
	case PROTO_KILL:
		pty_kill(t, (int)m->u.signal);
		break;
	case PROTO_RESIZE:
		pty_resize(t, &m->u.winsize);
		break;
	default:
		pty_fail(s, st, EPROTO, PROTO_TEXT_UNEXPECTED " from the host");
		break;
	}
}

static void pty_event(struct server *s, struct stream *st, struct watch *w)
{
	if (w->kind == W_STDIN)
		pty_write_keys(s, as_pty(st));
	else
		pty_read_screen(s, as_pty(st));
}

static bool output_paused(const struct server *s, const struct pty *t)
{
	return outq_full(&s->q) || t->unacked >= PROTO_WINDOW;
}

static int pty_interest(struct server *s, struct stream *st, sbx_error_t *err)
{
	struct pty *t = as_pty(st);
	if (srv_watch_set(s, &t->out, output_paused(s, t) ? 0 : EPOLLIN, err) < 0)
		return -1;
	return srv_watch_set(s, &t->in, t->in_len > 0 ? EPOLLOUT : 0, err);
}

static void pty_reaped(struct server *s, struct stream *st, pid_t pid, int status)
{
	struct pty *t = as_pty(st);
	if (st->dead || t->exited || t->pid != pid)
		return;
	t->exited = true;
	t->code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
	t->drain_deadline = sbx_now_ms() + DISPATCH_DRAIN_MS;
	pty_try_finish(s, t);
}

/* Ends a drain that went quiet (see the top of the file). */
static int64_t pty_tick(struct server *s, struct stream *st, int64_t now)
{
	struct pty *t = as_pty(st);
	if (st->dead || !t->exited)
		return -1;
	if (now >= t->drain_deadline) {
		if (!output_paused(s, t)) {
			srv_watch_close(s, &t->out);
			pty_try_finish(s, t);
			return -1;
		}
		t->drain_deadline = now + DISPATCH_DRAIN_MS; /* waiting for the host */
	}
	return t->drain_deadline - now;
}

static void pty_stop(struct server *s, struct stream *st)
{
	pty_kill(as_pty(st), SIGKILL);
	pty_end(s, as_pty(st));
}

static void pty_destroy(struct stream *st)
{
	free(as_pty(st)->in_buf);
	free(st);
}

static const struct stream_ops pty_ops = {
	.msg = pty_msg,
	.fail = pty_fail,
	.event = pty_event,
	.interest = pty_interest,
	.reaped = pty_reaped,
	.tick = pty_tick,
	.stop = pty_stop,
	.destroy = pty_destroy,
};

/* The exec failure the child reported, as the screen's first line. */
static void pty_exec_failed(struct server *s, struct pty *t, char *failure)
{
	char line[512];
	size_t n = strcspn(failure != NULL ? failure : "exec: failed", "\n");
	if (n > sizeof(line) - 3)
		n = sizeof(line) - 3;
	memcpy(line, failure != NULL ? failure : "exec: failed", n);
	memcpy(line + n, "\r\n", 2);
	struct proto_msg e = { .stream = t->st.id, .type = PROTO_STDOUT };
	e.u.data = (struct proto_data){ (const uint8_t *)line, n + 2 };
	t->unacked += (uint32_t)e.u.data.len;
	srv_push(s, &e);
	free(failure);
}

/* Undoes srv_pty_open's work when the stream could not be added. */
static void pty_abandon(struct server *s, struct pty *t, uint32_t id, const char *why)
{
	if (t->pid > 0)
		pty_kill(t, SIGKILL);
	srv_watch_close(s, &t->out);
	srv_watch_close(s, &t->in);
	exec_cgroup_release(t->cgroup_dir_fd, &t->cg);
	free(t);
	srv_push_error(s, id, why);
}

void srv_pty_open(struct server *s, struct proto_msg *m)
{
	if (s->live[STREAM_PROC] + s->live[STREAM_PTY] >= DISPATCH_MAX_PROCS) {
		srv_push_error(s, m->stream, "too many processes");
		return;
	}
	struct pty *t = calloc(1, sizeof(*t));
	if (t == NULL) {
		srv_push_error(s, m->stream, "out of memory");
		return;
	}
	t->out.fd = t->in.fd = -1;
	t->cgroup_dir_fd = s->cfg->cgroup_dir_fd;
	cleanup_error sbx_error_t err = NULL;
	if (exec_cgroup_create(t->cgroup_dir_fd, s->cfg->exec_pids_max, &t->cg, &err) < 0) {
		srv_push_error(s, m->stream, sbx_error_msg(err));
		free(t);
		return;
	}
	const struct proto_spawn_pty *sp = &m->u.spawn_pty;
	struct spawn_req req = {
		.argv = sp->argv,
		.boot_env = s->cfg->boot_env,
		.env = sp->env,
		.cwd = sp->cwd,
		.rows = sp->rows,
		.cols = sp->cols,
		.cgroup_procs_fd = t->cg.procs_fd,
		.user = s->cfg->user,
	};
	struct spawn_result res;
	if (spawn_process(&req, &res, &err) < 0) {
		pty_abandon(s, t, m->stream, sbx_error_msg(err));
		return;
	}
	t->st = (struct stream){ .id = m->stream, .kind = STREAM_PTY, .ops = &pty_ops };
	t->pid = res.pid;
	t->out = (struct watch){ W_STDOUT, &t->st, res.tty_fd, 0 };
	t->in = (struct watch){ W_STDIN, &t->st, fcntl(res.tty_fd, F_DUPFD_CLOEXEC, 3), 0 };
	if (t->in.fd < 0 || srv_stream_add(s, &t->st) < 0) {
		free(res.failure);
		pty_abandon(s, t, m->stream, t->in.fd < 0 ? "out of file descriptors" : "out of memory");
		return;
	}
	struct proto_msg started = { .stream = t->st.id, .type = PROTO_STARTED, .u.pid = (uint32_t)t->pid };
	srv_push(s, &started);
	if (res.exec_errno != 0)
		pty_exec_failed(s, t, res.failure);
}
