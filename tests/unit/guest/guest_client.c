/* Test-side host end of the control protocol (see guest_client.h). */
#include "guest_client.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "guest/dispatch.h"

int client_start(struct client *c, char **boot_env)
{
	return client_start_as(c, boot_env, NULL);
}

int client_start_as(struct client *c, char **boot_env, const struct guest_user *user)
{
	memset(c, 0, sizeof(*c));
	proto_reader_init(&c->rd);
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(sv[0]);
		/* Orphans come to the server, as they come to PID 1 in the VM. */
		prctl(PR_SET_CHILD_SUBREAPER, 1);
		struct dispatch_config cfg = { .boot_env = boot_env, .cgroup_dir_fd = -1, .user = user };
		sbx_error_t err = NULL;
		int rc = dispatch_serve(sv[1], &cfg, &err);
		sbx_error_free(&err);
		_exit(rc + 10);
	}
	close(sv[1]);
	c->fd = sv[0];
	c->server = pid;
	return 0;
}

int client_stop(struct client *c)
{
	close(c->fd);
	proto_reader_free(&c->rd);
	int st;
	if (waitpid(c->server, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

int client_send_raw(struct client *c, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n > 0) {
		ssize_t w = write(c->fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

int client_send(struct client *c, const struct proto_msg *m)
{
	struct proto_wbuf f;
	sbx_error_t err = NULL;
	proto_wbuf_init(&f);
	int rc = proto_msg_encode(&f, m, &err);
	if (rc == 0)
		rc = client_send_raw(c, f.data, f.len);
	sbx_error_free(&err);
	proto_wbuf_free(&f);
	return rc;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int client_next(struct client *c, struct proto_msg *m, int timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;
	for (;;) {
		while (c->off < c->len) {
			size_t used;
			struct proto_header h;
			const uint8_t *payload;
			sbx_error_t err = NULL;
			int rc = proto_reader_feed(&c->rd, c->buf + c->off, c->len - c->off, &used, &h, &payload, &err);
			c->off += used;
			if (rc == 1)
				rc = proto_msg_decode(&h, payload, m, &err) == 0 ? 1 : -1;
			sbx_error_free(&err);
			if (rc != 0)
				return rc;
		}
		int left = (int)(end - now_ms());
		if (left <= 0)
			return 0;
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		int pr = poll(&pfd, 1, left);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			return pr;
		ssize_t n = read(c->fd, c->buf, sizeof(c->buf));
		if (n <= 0)
			return -1;
		c->off = 0;
		c->len = (size_t)n;
	}
}

int client_spawn(struct client *c, uint32_t stream, char **argv, char **env, const char *cwd, uint32_t flags)
{
	char *none[] = { NULL };
	struct proto_msg m = { .stream = stream, .type = PROTO_SPAWN };
	m.u.spawn = (struct proto_spawn){ argv, env ? env : none, (char *)cwd, flags };
	return client_send(c, &m);
}

int client_spawn_pty(struct client *c, uint32_t stream, char **argv, char **env, uint32_t rows, uint32_t cols)
{
	char *none[] = { NULL };
	struct proto_msg m = { .stream = stream, .type = PROTO_SPAWN_PTY };
	m.u.spawn_pty = (struct proto_spawn_pty){ argv, env ? env : none, "", rows, cols };
	return client_send(c, &m);
}

void run_init(struct run *r, uint32_t stream)
{
	memset(r, 0, sizeof(*r));
	r->stream = stream;
	r->code = -1;
}

void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
	free(r->error);
}

static int append(char **buf, size_t *len, const uint8_t *p, size_t n)
{
	char *b = realloc(*buf, *len + n + 1);
	if (b == NULL)
		return -1;
	memcpy(b + *len, p, n);
	*len += n;
	b[*len] = '\0';
	*buf = b;
	return 0;
}

/* Adds one message to the run of its stream, if any; credits output when
 * `credit` is set. */
static void absorb(struct client *c, struct run *runs, size_t n, int credit, const struct proto_msg *m)
{
	struct run *r = NULL;
	for (size_t i = 0; i < n; i++)
		if (runs[i].stream == m->stream)
			r = &runs[i];
	if (r == NULL)
		return;
	switch (m->type) {
	case PROTO_STARTED:
		r->pid = m->u.pid;
		break;
	case PROTO_STDOUT:
	case PROTO_STDERR:
		if (m->type == PROTO_STDOUT)
			append(&r->out, &r->out_len, m->u.data.data, m->u.data.len);
		else
			append(&r->err, &r->err_len, m->u.data.data, m->u.data.len);
		if (credit) {
			struct proto_msg cr = { .stream = m->stream, .type = PROTO_CREDIT,
						.u.credit = (uint32_t)m->u.data.len };
			client_send(c, &cr);
		}
		break;
	case PROTO_EXIT:
		r->code = m->u.code;
		r->done = 1;
		break;
	case PROTO_ERROR:
		free(r->error);
		r->error = strdup(m->u.message);
		r->done = 1;
		break;
	}
}

int client_pump(struct client *c, struct run *runs, size_t n, int credit, int timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;
	for (;;) {
		int done = 0;
		for (size_t i = 0; i < n; i++)
			done += runs[i].done;
		int left = (int)(end - now_ms());
		if ((size_t)done == n || left <= 0)
			return done;
		struct proto_msg m;
		if (client_next(c, &m, left) <= 0)
			return done;
		absorb(c, runs, n, credit, &m);
		proto_msg_free(&m);
	}
}

int client_pump_until(struct client *c, struct run *r, const char *needle, int timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;
	for (;;) {
		if (r->out != NULL && strstr(r->out, needle) != NULL)
			return 1;
		int left = (int)(end - now_ms());
		if (r->done || left <= 0)
			return 0;
		struct proto_msg m;
		if (client_next(c, &m, left) <= 0)
			return 0;
		absorb(c, r, 1, 1, &m);
		proto_msg_free(&m);
	}
}
