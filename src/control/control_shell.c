/* The operator's shell (control_proto.h, shell): a terminal
 * (adapter/terminal/terminal.h) whose keys and size come from this
 * connection and whose screen goes back to it as frames, no engine
 * channel in between.  The connection's thread waits until the terminal
 * let go of it, then sends the final line with the exit status. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "adapter/request.h"
#include "adapter/scode.h"
#include "adapter/terminal/terminal.h"
#include "common/cleanup.h"
#include "common/log.h"
#include "control/control_ops.h"

#define SHELL_DEFAULT_ARGV "if [ -x /bin/bash ]; then exec /bin/bash -i; fi; exec /bin/sh -i"

struct shell {
	struct sbx_adapter *a;
	struct control_reader *r;
	int fd;
	char sandbox_id[SBX_UUID_STRLEN + 1];
	char terminal_id[SBX_UUID_STRLEN + 1];
	uint8_t *keys; /* CONTROL_KEYS_MAX */

	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool ready; /* the first line is out: screen frames may follow */
	bool released;
	int exit_code;
	char *fail;
};

/* The client's next keys; sizes are applied here.  The connection's end
 * is the client gone (-1: the terminal closes). */
static ssize_t shell_keys(void *ud, const uint8_t **data, sbx_error_t *err)
{
	struct shell *s = ud;
	for (;;) {
		json_t *msg = NULL;
		int n = control_read_json(s->r, &msg, err);
		if (n == 0)
			return sbx_error_set(err, ECONNRESET, "shell: the client went away");
		if (n < 0)
			return -1;
		uint16_t rows, cols;
		if (json_object_get(msg, "rows") != NULL) {
			int rc = control_size_parse(msg, &rows, &cols, err);
			json_decref(msg);
			if (rc < 0)
				return -1;
			sbx_error_t rerr = NULL;
			if (sbx_terminal_resize(s->a, s->sandbox_id, s->terminal_id, rows, cols, &rerr) < 0) {
				sbx_debug("shell %s: resize: %s", s->terminal_id, sbx_error_msg(rerr));
				sbx_error_free(&rerr);
			}
			continue;
		}
		size_t len;
		int stream;
		n = control_frame_parse(msg, &len, &stream, err);
		json_decref(msg);
		if (n < 0)
			return -1;
		/* {"end": true}: no more keys, but sizes may still come, and
		 * the connection's end still means the client went away. */
		if (n == 0)
			continue;
		if (len > CONTROL_KEYS_MAX)
			return sbx_error_set(err, EPROTO, "shell: a frame of %zu bytes of keys (at most %u)", len,
					     CONTROL_KEYS_MAX);
		if (control_read_exact(s->r, s->keys, len, err) < 0)
			return -1;
		*data = s->keys;
		return (ssize_t)len;
	}
}

static int shell_screen(void *ud, const void *data, size_t len, sbx_error_t *err)
{
	struct shell *s = ud;
	pthread_mutex_lock(&s->lock);
	while (!s->ready)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	return control_send_frame(s->fd, data, len, err);
}

static void shell_ended(void *ud, int exit_code, const char *fail)
{
	struct shell *s = ud;
	s->exit_code = exit_code;
	if (fail != NULL)
		s->fail = strdup(fail);
}

/* The command is gone: a read blocked in shell_keys() returns. */
static void shell_wake(void *ud)
{
	struct shell *s = ud;
	shutdown(s->fd, SHUT_RD);
}

static void shell_release(void *ud)
{
	struct shell *s = ud;
	pthread_mutex_lock(&s->lock);
	s->released = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

/* argv: the request's, else the image's shell. */
static char **shell_argv(const struct control_request *q, sbx_error_t *err)
{
	if (q->argv == NULL) {
		char **v = calloc(4, sizeof(*v));
		if (v == NULL)
			return sbx_error_errno(err, ENOMEM, "argv"), NULL;
		v[0] = "/bin/sh";
		v[1] = "-c";
		v[2] = SHELL_DEFAULT_ARGV;
		return v;
	}
	return req_strv_view(q->argv, "argv", err);
}

static int send_adapter_error(int fd, sbx_error_t *terr, sbx_error_t *err)
{
	json_t *body = NULL;
	sbx_op_fail(terr, &body);
	int rc = control_send_body_error(fd, body, err);
	json_decref(body);
	return rc;
}

static int run(struct shell *s, const struct control_request *q, sbx_error_t *err)
{
	sbx_error_t terr = NULL;
	cleanup_free char **argv = shell_argv(q, &terr);
	char term[16 + CONTROL_TERM_MAX];
	snprintf(term, sizeof(term), "TERM=%s", q->term != NULL ? q->term : "xterm-256color");
	char *env[] = { term, NULL };
	struct sbx_terminal_spec spec = { argv, env, q->rows, q->cols };
	struct sbx_terminal_io io = {
		.keys = shell_keys, .screen = shell_screen, .ended = shell_ended, .wake = shell_wake,
		.release = shell_release, .ud = s,
	};
	if (argv == NULL || sbx_terminal_open(s->a, s->sandbox_id, &spec, &io, s->terminal_id, &terr) < 0)
		return send_adapter_error(s->fd, &terr, err);
	/* Before any screen frame: shell_screen() waits for `ready`. */
	json_t *hello = json_pack("{s:s}", "terminal_id", s->terminal_id);
	sbx_error_t herr = NULL;
	if (hello == NULL || control_send_json(s->fd, hello, &herr) < 0)
		sbx_error_free(&herr);
	json_decref(hello);
	pthread_mutex_lock(&s->lock);
	s->ready = true;
	pthread_cond_broadcast(&s->cond);
	while (!s->released)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	if (s->fail != NULL)
		return control_send_error(s->fd, "S300", s->fail, err);
	return control_send_ok(s->fd,
			       json_pack("{s:o}", "exit_code", s->exit_code >= 0 ? json_integer(s->exit_code) : json_null()),
			       err);
}

int control_shell(const struct control_ctx *c, struct control_reader *r, int fd, const char *id,
		  const struct control_request *q, sbx_error_t *err)
{
	struct shell s = { .a = c->a, .r = r, .fd = fd, .exit_code = -1 };
	/* A person may type nothing for hours: no receive timeout (the send
	 * timeout stays: a client that stops reading closes the terminal). */
	struct timeval forever = { 0, 0 };
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &forever, sizeof(forever)) < 0)
		return sbx_error_errno(err, errno, "shell: SO_RCVTIMEO");
	memcpy(s.sandbox_id, id, sizeof(s.sandbox_id));
	if ((s.keys = malloc(CONTROL_KEYS_MAX)) == NULL)
		return sbx_error_errno(err, ENOMEM, "shell");
	pthread_mutex_init(&s.lock, NULL);
	pthread_cond_init(&s.cond, NULL);
	int rc = run(&s, q, err);
	pthread_mutex_destroy(&s.lock);
	pthread_cond_destroy(&s.cond);
	free(s.fail);
	free(s.keys);
	return rc;
}
