/* The fakes of fake_term_ports.h. */
#include "fake_term_ports.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"

static pthread_mutex_t L = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t C = PTHREAD_COND_INITIALIZER;
static struct fake_term_state S;

struct fake_term_state fake_term_state(void)
{
	pthread_mutex_lock(&L);
	struct fake_term_state s = S;
	pthread_mutex_unlock(&L);
	return s;
}

void fake_term_set(bool ignore_hup, bool fail_start)
{
	pthread_mutex_lock(&L);
	S.ignore_hup = ignore_hup;
	S.fail_start = fail_start;
	pthread_mutex_unlock(&L);
}

bool fake_term_wait(bool (*pred)(const struct fake_term_state *s), int ms)
{
	int64_t end = sbx_now_ms() + ms;
	for (;;) {
		struct fake_term_state s = fake_term_state();
		if (pred(&s))
			return true;
		if (sbx_now_ms() > end)
			return false;
		usleep(5000);
	}
}

/* ---- the process ---- */

struct fproc {
	char out[8192];
	size_t out_len;
	char line[256];
	size_t line_len;
	int rows, cols;
	bool exited, ignore_hup;
	int code;
};

static void emit(struct fproc *p, const char *s)
{
	size_t n = strlen(s);
	if (p->out_len + n <= sizeof(p->out)) {
		memcpy(p->out + p->out_len, s, n);
		p->out_len += n;
	}
}

static void *fproc_start(void *vm, const struct sbx_proc_request *req, uint32_t *pid, sbx_error_t *err)
{
	(void)vm;
	pthread_mutex_lock(&L);
	bool fail = S.fail_start;
	struct fproc *p = fail ? NULL : calloc(1, sizeof(*p));
	if (p != NULL) {
		p->rows = req->rows;
		p->cols = req->cols;
		p->ignore_hup = S.ignore_hup;
		S.procs_live++;
		S.procs_started++;
		S.last_rows = req->rows;
		S.last_cols = req->cols;
		snprintf(S.last_argv2, sizeof(S.last_argv2), "%s", req->argv[1] != NULL ? req->argv[2] : req->argv[0]);
		snprintf(S.last_env0, sizeof(S.last_env0), "%s", req->env != NULL && req->env[0] != NULL ? req->env[0] : "");
		emit(p, "$ ");
	}
	pthread_mutex_unlock(&L);
	if (p == NULL)
		return sbx_error_scode(err, "S300", "fake: cannot start"), NULL;
	*pid = 42;
	return p;
}

static ssize_t fproc_read(void *proc, int *fd, void *buf, size_t len, int64_t deadline, sbx_error_t *err)
{
	struct fproc *p = proc;
	pthread_mutex_lock(&L);
	while (p->out_len == 0 && !p->exited) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		int64_t left = deadline - sbx_now_ms();
		if (left <= 0) {
			pthread_mutex_unlock(&L);
			return sbx_error_set(err, ETIMEDOUT, "fake: no output yet");
		}
		ts.tv_sec += left / 1000;
		ts.tv_nsec += (left % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&C, &L, &ts);
	}
	size_t n = p->out_len < len ? p->out_len : len;
	memcpy(buf, p->out, n);
	memmove(p->out, p->out + n, p->out_len - n);
	p->out_len -= n;
	pthread_mutex_unlock(&L);
	*fd = 1;
	return (ssize_t)n;
}

static void finish(struct fproc *p, int code)
{
	if (!p->exited) {
		p->exited = true;
		p->code = code;
		pthread_cond_broadcast(&C);
	}
}

static void run_line(struct fproc *p)
{
	p->line[p->line_len] = '\0';
	char buf[64];
	if (strcmp(p->line, "stty size") == 0) {
		snprintf(buf, sizeof(buf), "%d %d\r\n$ ", p->rows, p->cols);
		emit(p, buf);
	} else if (strncmp(p->line, "exit ", 5) == 0) {
		finish(p, atoi(p->line + 5));
	} else {
		emit(p, "$ ");
	}
	p->line_len = 0;
}

static ssize_t fproc_write(void *proc, const void *buf, size_t len, int64_t deadline, sbx_error_t *err)
{
	(void)deadline;
	struct fproc *p = proc;
	pthread_mutex_lock(&L);
	if (p->exited) {
		pthread_mutex_unlock(&L);
		return sbx_error_set(err, EPIPE, "fake: exited");
	}
	const char *s = buf;
	for (size_t i = 0; i < len; i++) {
		char echo[3] = { s[i], 0, 0 };
		if (s[i] == '\n') {
			strcpy(echo, "\r\n");
			emit(p, echo);
			run_line(p);
			continue;
		}
		emit(p, echo);
		if (p->line_len + 1 < sizeof(p->line))
			p->line[p->line_len++] = s[i];
	}
	pthread_cond_broadcast(&C);
	pthread_mutex_unlock(&L);
	return (ssize_t)len;
}

static int fproc_close_stdin(void *proc, sbx_error_t *err)
{
	(void)err;
	struct fproc *p = proc;
	pthread_mutex_lock(&L);
	S.stdin_closed++;
	finish(p, 0); /* a shell exits at the end of its input */
	pthread_mutex_unlock(&L);
	return 0;
}

static int fproc_signal(void *proc, int sig, sbx_error_t *err)
{
	(void)err;
	struct fproc *p = proc;
	pthread_mutex_lock(&L);
	if (sig == SIGHUP) {
		S.hups++;
		if (!p->ignore_hup)
			finish(p, 128 + SIGHUP);
	} else if (sig == SIGKILL) {
		S.kills++;
		finish(p, 128 + SIGKILL);
	}
	pthread_mutex_unlock(&L);
	return 0;
}

static int fproc_wait(void *proc, int64_t deadline, int *code, sbx_error_t *err)
{
	(void)deadline, (void)err;
	struct fproc *p = proc;
	pthread_mutex_lock(&L);
	*code = p->code;
	pthread_mutex_unlock(&L);
	return 0;
}

static int fproc_resize(void *proc, uint16_t rows, uint16_t cols, sbx_error_t *err)
{
	(void)err;
	struct fproc *p = proc;
	pthread_mutex_lock(&L);
	p->rows = rows;
	p->cols = cols;
	S.last_rows = rows;
	S.last_cols = cols;
	pthread_mutex_unlock(&L);
	return 0;
}

static void fproc_free(void *proc)
{
	pthread_mutex_lock(&L);
	S.procs_live--;
	pthread_mutex_unlock(&L);
	free(proc);
}

static void fvm_stop(void *vm)
{
	(void)vm;
}

/* ---- exec ---- */

static int fexec(void *vm, const struct sbx_exec_request *req, struct sbx_exec_result *res, sbx_error_t *err)
{
	(void)vm;
	res->exit_code = 0;
	if (strcmp(req->argv[0], "cat") == 0) {
		if (req->stdin_data == NULL || req->stdin_len == 0)
			return 0;
		if (req->on_output != NULL && req->on_output(req->output_ud, 1, req->stdin_data, req->stdin_len) == 1)
			return 0;
		return exec_output_append(&res->out, req->stdin_data, req->stdin_len, err);
	}
	pthread_mutex_lock(&L);
	S.execs_live++;
	pthread_mutex_unlock(&L);
	int64_t end = sbx_now_ms() + (int64_t)req->timeout_ms;
	bool cancelled = false;
	while (!cancelled && sbx_now_ms() < end) {
		cancelled = req->cancelled != NULL && req->cancelled(req->cancel_ud);
		if (!cancelled) {
			pthread_mutex_lock(&L);
			S.exec_polls += req->cancelled != NULL;
			pthread_mutex_unlock(&L);
			usleep(5000);
		}
	}
	pthread_mutex_lock(&L);
	S.execs_live--;
	S.execs_cancelled += cancelled;
	pthread_mutex_unlock(&L);
	if (cancelled)
		return sbx_error_scode(err, "S004", "fake: the sandbox was stopped while the command ran");
	return sbx_error_scode(err, "S200", "fake: exec timed out");
}

const struct sbx_backend_ops fake_term_backend = {
	.stop = fvm_stop,
	.exec = fexec,
	.proc_start = fproc_start,
	.proc_read = fproc_read,
	.proc_write = fproc_write,
	.proc_close_stdin = fproc_close_stdin,
	.proc_signal = fproc_signal,
	.proc_wait = fproc_wait,
	.proc_resize = fproc_resize,
	.proc_free = fproc_free,
};

/* ---- the channels ---- */

#define CHANS 64
struct fchan {
	char data[16384];
	size_t len, pos; /* pos: what the adapter's reader took */
	bool closed, aborted;
	char fail[128];
};
static struct fchan chans[CHANS];
static int n_chans;

static struct fchan *chan_of(json_t *ref)
{
	const char *id = json_string_value(json_object_get(ref, "channel_id"));
	int i = id != NULL ? atoi(id) : -1;
	return i >= 0 && i < n_chans ? &chans[i] : NULL;
}

static int fcreate(void *ctx, json_t **writer, json_t **reader, sbx_error_t *err)
{
	(void)ctx;
	pthread_mutex_lock(&L);
	int i = n_chans < CHANS ? n_chans++ : -1;
	if (i >= 0)
		memset(&chans[i], 0, sizeof(chans[i]));
	pthread_mutex_unlock(&L);
	if (i < 0)
		return sbx_error_set(err, ENOSPC, "fake: out of channels");
	char id[16];
	snprintf(id, sizeof(id), "%d", i);
	*writer = json_pack("{s:s, s:s, s:s}", "channel_id", id, "access_key", "k", "direction", "write");
	*reader = json_pack("{s:s, s:s, s:s}", "channel_id", id, "access_key", "k", "direction", "read");
	return 0;
}

static void *fwriter_open(void *ctx, json_t *ref, sbx_error_t *err)
{
	(void)ctx;
	struct fchan *c = chan_of(ref);
	if (c == NULL)
		return sbx_error_scode(err, "S001", "fake: bad ref"), NULL;
	pthread_mutex_lock(&L);
	S.writers_open++;
	pthread_mutex_unlock(&L);
	return c;
}

static int fwriter_send(void *w, const void *data, size_t len, sbx_error_t *err)
{
	(void)err;
	struct fchan *c = w;
	pthread_mutex_lock(&L);
	size_t n = len < sizeof(c->data) - 1 - c->len ? len : sizeof(c->data) - 1 - c->len;
	memcpy(c->data + c->len, data, n);
	c->len += n;
	pthread_cond_broadcast(&C);
	pthread_mutex_unlock(&L);
	return 0;
}

static void fwriter_close(void *w, const char *fail_text)
{
	struct fchan *c = w;
	pthread_mutex_lock(&L);
	c->closed = true;
	snprintf(c->fail, sizeof(c->fail), "%s", fail_text != NULL ? fail_text : "");
	S.writers_open--;
	pthread_cond_broadcast(&C);
	pthread_mutex_unlock(&L);
}

static void *freader_open(void *ctx, json_t *ref, int idle_ms, sbx_error_t *err)
{
	(void)ctx;
	struct fchan *c = chan_of(ref);
	if (c == NULL || idle_ms != -1)
		return sbx_error_scode(err, "S001", "fake: bad ref or idle_ms %d", idle_ms), NULL;
	pthread_mutex_lock(&L);
	S.readers_open++;
	pthread_mutex_unlock(&L);
	return c;
}

static ssize_t freader_next(void *r, const uint8_t **data, sbx_error_t *err)
{
	struct fchan *c = r;
	pthread_mutex_lock(&L);
	while (c->pos == c->len && !c->closed)
		pthread_cond_wait(&C, &L);
	if (c->pos == c->len && c->aborted) {
		pthread_mutex_unlock(&L);
		return sbx_error_scode(err, "S218", "fake: the writer vanished");
	}
	ssize_t n = (ssize_t)(c->len - c->pos);
	*data = (const uint8_t *)c->data + c->pos;
	c->pos = c->len;
	pthread_mutex_unlock(&L);
	return n;
}

static void freader_close(void *r)
{
	(void)r;
	pthread_mutex_lock(&L);
	S.readers_open--;
	pthread_mutex_unlock(&L);
}

const struct sbx_stream_ops fake_term_streams = {
	.writer_open = fwriter_open,
	.writer_send = fwriter_send,
	.writer_close = fwriter_close,
	.reader_open = freader_open,
	.reader_next = freader_next,
	.reader_close = freader_close,
	.create = fcreate,
};

void fake_chan_write(json_t *ref, const char *text)
{
	struct fchan *c = chan_of(ref);
	pthread_mutex_lock(&L);
	size_t n = strlen(text);
	if (c != NULL && c->len + n < sizeof(c->data)) {
		memcpy(c->data + c->len, text, n);
		c->len += n;
	}
	pthread_cond_broadcast(&C);
	pthread_mutex_unlock(&L);
}

void fake_chan_close(json_t *ref)
{
	struct fchan *c = chan_of(ref);
	pthread_mutex_lock(&L);
	if (c != NULL)
		c->closed = true;
	pthread_cond_broadcast(&C);
	pthread_mutex_unlock(&L);
}

void fake_chan_abort(json_t *ref)
{
	struct fchan *c = chan_of(ref);
	pthread_mutex_lock(&L);
	if (c != NULL)
		c->closed = c->aborted = true;
	pthread_cond_broadcast(&C);
	pthread_mutex_unlock(&L);
}

bool fake_chan_wait_for(json_t *ref, const char *needle, int ms)
{
	struct fchan *c = chan_of(ref);
	int64_t end = sbx_now_ms() + ms;
	for (;;) {
		pthread_mutex_lock(&L);
		bool found = c != NULL && (c->data[c->len] = '\0', strstr(c->data, needle) != NULL);
		pthread_mutex_unlock(&L);
		if (found)
			return true;
		if (sbx_now_ms() > end)
			return false;
		usleep(5000);
	}
}

bool fake_chan_wait_closed(json_t *ref, int ms, char *fail, size_t len)
{
	struct fchan *c = chan_of(ref);
	int64_t end = sbx_now_ms() + ms;
	for (;;) {
		pthread_mutex_lock(&L);
		bool closed = c != NULL && c->closed;
		if (closed)
			snprintf(fail, len, "%s", c->fail);
		pthread_mutex_unlock(&L);
		if (closed)
			return true;
		if (sbx_now_ms() > end)
			return false;
		usleep(5000);
	}
}
