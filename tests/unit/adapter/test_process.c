/* Background processes (exec `background`, process::*) through
 * sbx_adapter_call() over a fake backend whose processes the test drives:
 * the ring's offsets, the cap, list/logs/wait/signal, follow over a fake
 * byte-channel port, keep_alive_while_running and stop ending them all. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "adapter/adapter.h"
#include "adapter/process/process_entry.h"
#include "adapter/process/process_follow.h"
#include "adapter/process/process_ring.h"
#include "adapter/reaper.h"
#include "common/clock.h"
#include "harness.h"
#include "adapter_call.h"

/* ---- the fake backend: VMs are bytes, processes are queues ------------- */

struct fproc {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	char out[8192];
	int out_fd[8192];
	size_t n, head;
	bool exited;
	int code;
	int last_signal;
	char stdin_seen[64];
	size_t stdin_len;
	bool stdin_closed;
	char argv0[32];
};

static pthread_mutex_t fk_lock = PTHREAD_MUTEX_INITIALIZER;
#define FK_MAX 1024
static struct fproc *fk_procs[FK_MAX];
static int fk_n, fk_live, fk_starts;

static void *fk_boot(void *ctx, const struct sbx_boot_request *req, sbx_error_t *err)
{
	return calloc(1, 1);
}

static void fk_stop(void *vm)
{
	free(vm);
}

static int fk_exec(void *vm, const struct sbx_exec_request *req, struct sbx_exec_result *res, sbx_error_t *err)
{
	exec_output_append(&res->out, "fg\n", 3, err);
	res->exit_code = 0;
	return 0;
}

static void *fk_start(void *vm, const struct sbx_proc_request *req, uint32_t *pid, sbx_error_t *err)
{
	if (strcmp(req->argv[0], "nonexistent") == 0)
		return sbx_error_scode(err, "S300", "spawn failed: fake"), NULL;
	struct fproc *p = calloc(1, sizeof(*p));
	pthread_mutex_init(&p->lock, NULL);
	sbx_cond_init_monotonic(&p->cond);
	snprintf(p->argv0, sizeof(p->argv0), "%s", req->argv[0]);
	p->stdin_closed = !req->with_stdin;
	pthread_mutex_lock(&fk_lock);
	*pid = 100 + (uint32_t)fk_starts++;
	fk_live++;
	if (fk_n < FK_MAX)
		fk_procs[fk_n++] = p;
	pthread_mutex_unlock(&fk_lock);
	return p;
}

/* The test's side: output, then the exit. */
static void emit(struct fproc *p, int fd, const char *s, size_t n)
{
	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < n && p->n < sizeof(p->out); i++) {
		p->out_fd[p->n] = fd;
		p->out[p->n++] = s[i];
	}
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

static void finish(struct fproc *p, int code)
{
	pthread_mutex_lock(&p->lock);
	if (!p->exited) {
		p->exited = true;
		p->code = code;
	}
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

static ssize_t fk_read(void *proc, int *fd, void *buf, size_t len, int64_t deadline, sbx_error_t *err)
{
	struct fproc *p = proc;
	pthread_mutex_lock(&p->lock);
	while (p->head == p->n && !p->exited && sbx_now_ms() < deadline) {
		struct timespec ts = sbx_ms_timespec(deadline);
		pthread_cond_timedwait(&p->cond, &p->lock, &ts);
	}
	ssize_t n = 0;
	if (p->head < p->n) {
		*fd = p->out_fd[p->head];
		while (p->head < p->n && (size_t)n < len && p->out_fd[p->head] == *fd)
			((char *)buf)[n++] = p->out[p->head++];
	} else if (!p->exited) {
		n = -1;
		sbx_error_set(err, ETIMEDOUT, "fake read deadline");
	}
	pthread_mutex_unlock(&p->lock);
	return n;
}

static ssize_t fk_write(void *proc, const void *buf, size_t len, int64_t deadline, sbx_error_t *err)
{
	struct fproc *p = proc;
	pthread_mutex_lock(&p->lock);
	size_t n = len < sizeof(p->stdin_seen) - 1 - p->stdin_len ? len : sizeof(p->stdin_seen) - 1 - p->stdin_len;
	memcpy(p->stdin_seen + p->stdin_len, buf, n);
	p->stdin_len += n;
	pthread_mutex_unlock(&p->lock);
	return (ssize_t)(len > 0 && n == 0 ? len : n);
}

static int fk_close_stdin(void *proc, sbx_error_t *err)
{
	struct fproc *p = proc;
	pthread_mutex_lock(&p->lock);
	p->stdin_closed = true;
	pthread_mutex_unlock(&p->lock);
	return 0;
}

static int fk_signal(void *proc, int sig, sbx_error_t *err)
{
	struct fproc *p = proc;
	pthread_mutex_lock(&p->lock);
	p->last_signal = sig;
	pthread_mutex_unlock(&p->lock);
	if (sig == SIGTERM || sig == SIGKILL)
		finish(p, 128 + sig);
	return 0;
}

static int fk_wait(void *proc, int64_t deadline, int *code, sbx_error_t *err)
{
	struct fproc *p = proc;
	pthread_mutex_lock(&p->lock);
	while (!p->exited && sbx_now_ms() < deadline) {
		struct timespec ts = sbx_ms_timespec(deadline);
		pthread_cond_timedwait(&p->cond, &p->lock, &ts);
	}
	bool done = p->exited;
	*code = p->code;
	pthread_mutex_unlock(&p->lock);
	return done ? 0 : sbx_error_set(err, ETIMEDOUT, "fake wait deadline");
}

/* The process stays for the test to inspect: only counted as freed. */
static void fk_free(void *proc)
{
	finish(proc, 137);
	pthread_mutex_lock(&fk_lock);
	fk_live--;
	pthread_mutex_unlock(&fk_lock);
}

static const struct sbx_backend_ops fk_ops = { .boot = fk_boot, .exec = fk_exec, .stop = fk_stop,
					       .proc_start = fk_start, .proc_read = fk_read, .proc_write = fk_write,
					       .proc_close_stdin = fk_close_stdin, .proc_signal = fk_signal,
					       .proc_wait = fk_wait, .proc_free = fk_free };

static void fk_reset(void)
{
	pthread_mutex_lock(&fk_lock);
	for (int i = 0; i < fk_n; i++) {
		pthread_cond_destroy(&fk_procs[i]->cond);
		pthread_mutex_destroy(&fk_procs[i]->lock);
		free(fk_procs[i]);
	}
	fk_n = 0;
	pthread_mutex_unlock(&fk_lock);
}

static struct fproc *fk_last(void)
{
	pthread_mutex_lock(&fk_lock);
	struct fproc *p = fk_n > 0 ? fk_procs[fk_n - 1] : NULL;
	pthread_mutex_unlock(&fk_lock);
	return p;
}

static int fk_live_now(void)
{
	pthread_mutex_lock(&fk_lock);
	int n = fk_live;
	pthread_mutex_unlock(&fk_lock);
	return n;
}

/* ---- a fake byte-channel port: writers on socketpairs ------------------- */

/* One writer: its frames concatenated and its end.  Its descriptor is one
 * end of a socketpair; the test closes the other to play a reader that
 * leaves, and the fake writes a byte there to answer a Close. */
struct fwriter {
	pthread_mutex_t lock;
	char data[4096];
	size_t len;
	int frames;
	bool closed, freed;
	char fail[256];
	int sock[2];
};

#define FW_MAX 1100
static pthread_mutex_t fw_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fwriter *fw_all[FW_MAX];
static int fw_n;

static void *fw_open(void *ctx, json_t *ref, sbx_error_t *err)
{
	const char *dir = json_string_value(json_object_get(ref, "direction"));
	if (dir == NULL || strcmp(dir, "write") != 0)
		return sbx_error_scode(err, "S001", "follow: not a writer ref"), NULL;
	struct fwriter *w = calloc(1, sizeof(*w));
	if (w == NULL || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, w->sock) < 0) {
		free(w);
		return sbx_error_errno(err, errno, "fake writer"), NULL;
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_mutex_lock(&fw_lock);
	if (fw_n < FW_MAX)
		fw_all[fw_n++] = w;
	pthread_mutex_unlock(&fw_lock);
	return w;
}

static int fw_fd(void *w)
{
	return ((struct fwriter *)w)->sock[0];
}

static int fw_queue(void *wp, const void *data, size_t len, const char *fail_text, sbx_error_t *err)
{
	struct fwriter *w = wp;
	pthread_mutex_lock(&w->lock);
	if (data != NULL) {
		size_t n = len < sizeof(w->data) - w->len ? len : sizeof(w->data) - w->len;
		memcpy(w->data + w->len, data, n);
		w->len += n;
		w->frames++;
	} else {
		w->closed = true;
		snprintf(w->fail, sizeof(w->fail), "%s", fail_text != NULL ? fail_text : "");
		/* the engine's answer to the Close */
		if (write(w->sock[1], "c", 1) != 1)
			fprintf(stderr, "# fake writer: %s\n", strerror(errno));
	}
	pthread_mutex_unlock(&w->lock);
	return 0;
}

static int fw_flush(void *w, short *events, sbx_error_t *err)
{
	*events = 0;
	return 1;
}

static bool fw_gone(void *wp)
{
	struct fwriter *w = wp;
	char c;
	ssize_t n = recv(w->sock[0], &c, 1, MSG_DONTWAIT | MSG_PEEK);
	pthread_mutex_lock(&w->lock);
	bool closed = w->closed;
	pthread_mutex_unlock(&w->lock);
	return n == 0 || (n < 0 && errno != EAGAIN) || (n == 1 && closed);
}

static void fw_free(void *wp)
{
	struct fwriter *w = wp;
	pthread_mutex_lock(&w->lock);
	w->freed = true;
	close(w->sock[0]);
	pthread_mutex_unlock(&w->lock);
}

static const struct sbx_stream_ops fw_ops = { .writer_open = fw_open, .writer_fd = fw_fd, .writer_queue = fw_queue,
					      .writer_flush = fw_flush, .writer_gone = fw_gone, .writer_free = fw_free };

static struct fwriter *fw_last(void)
{
	pthread_mutex_lock(&fw_lock);
	struct fwriter *w = fw_n > 0 ? fw_all[fw_n - 1] : NULL;
	pthread_mutex_unlock(&fw_lock);
	return w;
}

static bool fw_is(struct fwriter *w, bool *flag)
{
	pthread_mutex_lock(&w->lock);
	bool v = *flag;
	pthread_mutex_unlock(&w->lock);
	return v;
}

/* Waits up to 3 s for *flag of w. */
static bool fw_wait(struct fwriter *w, bool *flag)
{
	for (int i = 0; i < 300 && !fw_is(w, flag); i++)
		usleep(10000);
	return fw_is(w, flag);
}

static void fw_reset(void)
{
	pthread_mutex_lock(&fw_lock);
	for (int i = 0; i < fw_n; i++) {
		close(fw_all[i]->sock[1]);
		pthread_mutex_destroy(&fw_all[i]->lock);
		free(fw_all[i]);
	}
	fw_n = 0;
	pthread_mutex_unlock(&fw_lock);
}

/* ---- calls ---------------------------------------------------------------- */

static struct sbx_adapter *make(const char *config)
{
	fk_reset();
	json_t *v = json_loads(config, 0, NULL);
	sbx_error_t err = NULL;
	struct sbx_config *cfg = sbx_config_parse(v, &err);
	json_decref(v);
	struct sbx_adapter *a = cfg != NULL ? sbx_adapter_new(cfg, &err) : NULL;
	if (a != NULL && sbx_adapter_use_backend(a, &fk_ops, NULL, &err) < 0) {
		sbx_adapter_free(a);
		a = NULL;
	}
	if (err != NULL)
		fprintf(stderr, "# make: %s\n", sbx_error_msg(err));
	sbx_error_free(&err);
	return a;
}

static long long num(json_t *j, const char *k)
{
	return (long long)json_integer_value(json_object_get(j, k));
}

#define CFG "{\"image_allowlist\":[\"python\"]"

static char *create(struct sbx_adapter *a, const char *extra)
{
	json_t *r = adapter_callf(a, "create", "{\"image\":\"python\"%s}", extra);
	char *id = jstr(r, "sandbox_id") != NULL ? strdup(jstr(r, "sandbox_id")) : NULL;
	json_decref(r);
	return id;
}

/* exec background; the process_id (malloc'd) or NULL. */
static char *start_bg(struct sbx_adapter *a, const char *id, const char *fields)
{
	json_t *r = adapter_callf(a, "exec", "{\"sandbox_id\":\"%s\",\"background\":true,%s}", id, fields);
	char *pid = jstr(r, "process_id") != NULL ? strdup(jstr(r, "process_id")) : NULL;
	json_decref(r);
	return pid;
}

/* The row of process `pid` in process::list (a new reference) or NULL. */
static json_t *row_of(struct sbx_adapter *a, const char *id, const char *pid)
{
	json_t *r = adapter_callf(a, "process::list", "{\"sandbox_id\":\"%s\"}", id);
	json_t *rows = json_object_get(r, "processes"), *row = NULL;
	for (size_t i = 0; i < json_array_size(rows) && row == NULL; i++) {
		if (strcmp(jstr(json_array_get(rows, i), "process_id"), pid) == 0)
			row = json_incref(json_array_get(rows, i));
	}
	json_decref(r);
	return row;
}

/* Waits up to 2 s for the pump to have taken n bytes of `stream`. */
static bool wait_stream_bytes(struct sbx_adapter *a, const char *id, const char *pid, const char *stream, long long n)
{
	for (int i = 0; i < 200; i++) {
		json_t *row = row_of(a, id, pid);
		bool done = num(json_object_get(row, "bytes"), stream) >= n;
		json_decref(row);
		if (done)
			return true;
		usleep(10000);
	}
	return false;
}

static bool wait_bytes(struct sbx_adapter *a, const char *id, const char *pid, long long n)
{
	return wait_stream_bytes(a, id, pid, "stdout", n);
}

/* ---- the ring ------------------------------------------------------------- */

TEST(ring_keeps_absolute_offsets_through_growth_and_wrap)
{
	struct proc_ring r;
	proc_ring_init(&r, 10);
	char buf[32] = { 0 };
	proc_ring_append(&r, "abcdef", 6);
	CHECK_INT(proc_ring_start(&r), 0);
	CHECK_INT(proc_ring_copy(&r, 2, buf, sizeof(buf)), 4);
	CHECK(memcmp(buf, "cdef", 4) == 0);
	proc_ring_append(&r, "ghijkl", 6); /* 12 written, 10 kept: a, b gone */
	CHECK_INT(r.end, 12);
	CHECK_INT(proc_ring_start(&r), 2);
	CHECK_INT(proc_ring_copy(&r, 0, buf, sizeof(buf)), 10); /* clipped to the oldest kept */
	CHECK(memcmp(buf, "cdefghijkl", 10) == 0);
	CHECK_INT(proc_ring_copy(&r, 9, buf, 2), 2);
	CHECK(memcmp(buf, "jk", 2) == 0);
	CHECK_INT(proc_ring_copy(&r, 12, buf, sizeof(buf)), 0);
	proc_ring_append(&r, "0123456789ABCDE", 15); /* longer than the ring */
	CHECK_INT(r.end, 27);
	CHECK_INT(proc_ring_start(&r), 17);
	CHECK_INT(proc_ring_copy(&r, 17, buf, sizeof(buf)), 10);
	CHECK(memcmp(buf, "56789ABCDE", 10) == 0);
	proc_ring_free(&r);
}

TEST(ring_grows_past_its_first_allocation_without_moving_offsets)
{
	struct proc_ring r;
	proc_ring_init(&r, 1u << 20);
	char chunk[3000];
	for (int i = 0; i < 10; i++) {
		memset(chunk, 'a' + i, sizeof(chunk));
		proc_ring_append(&r, chunk, sizeof(chunk));
	}
	CHECK_INT(r.end, 30000);
	CHECK_INT(proc_ring_start(&r), 0);
	CHECK(r.cap < (1u << 20)); /* grew with the output, not to max at once */
	char c;
	for (int i = 0; i < 10; i++) {
		CHECK_INT(proc_ring_copy(&r, (uint64_t)i * 3000 + 2999, &c, 1), 1);
		CHECK_INT(c, 'a' + i);
	}
	proc_ring_free(&r);
}

TEST(slice_keeps_characters_whole)
{
	sbx_error_t err = NULL;
	json_t *argv = json_pack("[s]", "x");
	struct bg_proc *p = bg_proc_new(argv, 8, NULL, &err);
	json_decref(argv);
	CHECK(p != NULL);
	/* "a€" is 61 e2 82 ac; the last byte not written yet */
	bg_proc_output(p, 1, "a\xe2\x82", 3);
	struct bg_slice s;
	CHECK(bg_proc_slice(p, 1, 0, 100, &s, &err) == 0);
	CHECK_INT(s.len, 1);
	CHECK_INT(s.next, 1); /* the unfinished character waits */
	CHECK(!s.dropped && s.running);
	free(s.data);
	bg_proc_output(p, 1, "\xac" "bcdefg", 7); /* 10 written, 8 kept: from offset 2 */
	CHECK(bg_proc_slice(p, 1, 1, 100, &s, &err) == 0);
	CHECK(s.dropped);
	/* the ring starts at 82 (inside the €): data starts after it */
	CHECK_INT(s.len, 6);
	CHECK(memcmp(s.data, "bcdefg", 6) == 0);
	CHECK_INT(s.next, 10);
	free(s.data);
	/* an offset past what was written: nothing yet, from there */
	CHECK(bg_proc_slice(p, 1, 50, 100, &s, &err) == 0);
	CHECK_INT(s.len, 0);
	CHECK_INT(s.next, 50);
	free(s.data);
	/* once exited, an unfinished character at the end is given as is */
	bg_proc_output(p, 2, "\xe2\x82", 2);
	bg_proc_exited(p, 0);
	CHECK(bg_proc_slice(p, 2, 0, 100, &s, &err) == 0);
	CHECK_INT(s.len, 2);
	CHECK(!s.running);
	free(s.data);
	bg_proc_unref(p);
}

/* ---- the functions -------------------------------------------------------- */

TEST(background_exec_answers_at_once_and_takes_no_exec_slot)
{
	struct sbx_adapter *a = make(CFG ",\"max_concurrent_exec_per_sandbox\":1}");
	CHECK(a != NULL);
	char *id = create(a, "");
	CHECK(id != NULL);
	json_t *r = adapter_callf(a, "exec", "{\"sandbox_id\":\"%s\",\"background\":true,\"cmd\":\"python3 -m http.server\"}", id);
	CHECK(jstr(r, "process_id") != NULL);
	CHECK_INT(strlen(jstr(r, "process_id")), 36);
	CHECK_INT(num(r, "pid"), 100);
	CHECK_INT(json_object_size(r), 2);
	json_decref(r);
	CHECK_STR(fk_last()->argv0, "python3");
	/* the one exec slot is free: a foreground exec runs */
	r = adapter_callf(a, "exec", "{\"sandbox_id\":\"%s\",\"cmd\":\"true\"}", id);
	CHECK_STR(jstr(r, "stdout"), "fg\n");
	json_decref(r);
	r = adapter_callf(a, "list", "{}");
	CHECK_INT(num(json_array_get(json_object_get(r, "sandboxes"), 0), "exec_in_flight"), 0);
	json_decref(r);
	free(id);
	sbx_adapter_free(a);
	CHECK_INT(fk_live_now(), 0);
}

TEST(the_cap_counts_running_processes_and_names_its_key)
{
	struct sbx_adapter *a = make(CFG ",\"max_background_per_sandbox\":2}");
	CHECK(a != NULL);
	char *id = create(a, "");
	char *p1 = start_bg(a, id, "\"cmd\":\"sleep\"");
	char *p2 = start_bg(a, id, "\"cmd\":\"sleep\"");
	CHECK(p1 != NULL && p2 != NULL);
	struct fproc *f2 = fk_last();
	json_t *r = adapter_callf(a, "exec", "{\"sandbox_id\":\"%s\",\"background\":true,\"cmd\":\"sleep\"}", id);
	CHECK_STR(jstr(r, "code"), "S003");
	CHECK(strstr(jstr(r, "message"), "max_background_per_sandbox") != NULL);
	CHECK(strstr(jstr(r, "message"), "2") != NULL);
	json_decref(r);
	/* one exits: room for one more */
	finish(f2, 0);
	r = adapter_callf(a, "process::wait", "{\"sandbox_id\":\"%s\",\"process_id\":\"%s\",\"timeout_ms\":2000}", id, p2);
	CHECK_STR(jstr(r, "state"), "exited");
	json_decref(r);
	char *p3 = start_bg(a, id, "\"cmd\":\"sleep\"");
	CHECK(p3 != NULL);
	/* the exited one is still listed, with its logs */
	r = adapter_callf(a, "process::list", "{\"sandbox_id\":\"%s\"}", id);
	CHECK_INT(json_array_size(json_object_get(r, "processes")), 3);
	json_decref(r);
	free(p1), free(p2), free(p3), free(id);
	sbx_adapter_free(a);
	CHECK_INT(fk_live_now(), 0);
}

TEST(starting_one_past_cap_exited_ones_drops_the_oldest_exited)
{
	struct sbx_adapter *a = make(CFG ",\"max_background_per_sandbox\":2}");
	char *id = create(a, "");
	char *p[3];
	for (int i = 0; i < 3; i++) {
		p[i] = start_bg(a, id, "\"cmd\":\"true\"");
		CHECK(p[i] != NULL);
		if (i < 2) {
			finish(fk_last(), 0);
			json_t *r = adapter_callf(a, "process::wait", "{\"sandbox_id\":\"%s\",\"process_id\":\"%s\"}", id, p[i]);
			CHECK_STR(jstr(r, "state"), "exited");
			json_decref(r);
		}
	}
	/* two exited were kept when the third started: the first went */
	json_t *r = adapter_callf(a, "process::list", "{\"sandbox_id\":\"%s\"}", id);
	json_t *rows = json_object_get(r, "processes");
	CHECK_INT(json_array_size(rows), 2);
	CHECK_STR(jstr(json_array_get(rows, 0), "process_id"), p[1]);
	CHECK_STR(jstr(json_array_get(rows, 1), "process_id"), p[2]);
	json_decref(r);
	r = adapter_callf(a, "process::logs", "{\"sandbox_id\":\"%s\",\"process_id\":\"%s\"}", id, p[0]);
	CHECK_STR(jstr(r, "code"), "S001");
	json_decref(r);
	for (int i = 0; i < 3; i++)
		free(p[i]);
	free(id);
	sbx_adapter_free(a);
}

TEST(logs_wait_signal_and_list_follow_one_process)
{
	struct sbx_adapter *a = make(CFG "}");
	CHECK(a != NULL);
	char *id = create(a, "");
	char *pid = start_bg(a, id, "\"argv\":[\"server\",\"--port\",\"8000\"],\"timeout_ms\":1");
	CHECK(pid != NULL);
	struct fproc *f = fk_last();
	emit(f, 1, "hello world\n", 12);
	emit(f, 2, "warn\n", 5);
	CHECK(wait_bytes(a, id, pid, 12));
	CHECK(wait_stream_bytes(a, id, pid, "stderr", 5));
	json_t *r = adapter_callf(a, "process::logs", "{\"sandbox_id\":\"%s\",\"process_id\":\"%s\"}", id, pid);
	CHECK_STR(jstr(r, "data"), "hello world\n");
	CHECK_INT(num(r, "next_offset"), 12);
	CHECK(json_is_false(json_object_get(r, "dropped")));
	CHECK_STR(jstr(r, "state"), "running");
	json_decref(r);
	r = adapter_callf(a, "process::logs", "{\"sandbox_id\":\"%s\",\"process_id\":\"%s\",\"offset\":6}", id, pid);
	CHECK_STR(jstr(r, "data"), "world\n");
	json_decref(r);
	r = adapter_callf(a, "process::logs", "{\"sandbox_id\":\"%s\",\"process_id\":\"%s\",\"stream\":\"stderr\"}", id, pid);
	CHECK_STR(jstr(r, "data"), "warn\n");
	CHECK_INT(num(r, "next_offset"), 5);
	json_decref(r);
	/* timeout_ms did not apply: it runs; wait gives up, not an error */
	int64_t t0 = sbx_now_ms();
	r = adapter_callf(a, "process::wait", "{\"sandbox_id\":\"%s\",\"process_id\":\"%s\",\"timeout_ms\":100}", id, pid);
	CHECK_STR(jstr(r, "state"), "running");
	CHECK(json_object_get(r, "exit_code") == NULL);
	CHECK(sbx_now_ms() - t0 >= 100);
	json_decref(r);
	json_t *row = row_of(a, id, pid);
	CHECK_STR(jstr(row, "state"), "running");
	CHECK(json_object_get(row, "ended_at") == NULL);
	json_decref(row);
	r = adapter_callf(a, "process::signal", "{\"sandbox_id\":\"%s\",\"process_id\":\"%s\",\"signal\":\"TERM\"}", id, pid);
	CHECK(json_is_true(json_object_get(r, "sent")));
	json_decref(r);
	CHECK_INT(f->last_signal, SIGTERM);
	r = adapter_callf(a, "process::wait", "{\"sandbox_id\":\"%s\",\"process_id\":\"%s\"}", id, pid);
	CHECK_STR(jstr(r, "state"), "exited");
	CHECK_INT(num(r, "exit_code"), 143);
	json_decref(r);
	row = row_of(a, id, pid);
	CHECK_STR(jstr(row, "state"), "exited");
	CHECK_INT(num(row, "exit_code"), 143);
	CHECK_STR(json_string_value(json_array_get(json_object_get(row, "argv"), 2)), "8000");
	CHECK_INT(num(json_object_get(row, "bytes"), "stdout"), 12);
	CHECK_INT(num(json_object_get(row, "bytes"), "stderr"), 5);
	regex_t re;
	regcomp(&re, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$", REG_EXTENDED | REG_NOSUB);
	bool times = regexec(&re, jstr(row, "started_at"), 0, NULL, 0) == 0 &&
		     regexec(&re, jstr(row, "ended_at"), 0, NULL, 0) == 0 &&
		     strcmp(jstr(row, "started_at"), jstr(row, "ended_at")) <= 0;
	regfree(&re);
	json_decref(row);
	CHECK(times);
	/* an exited process: nothing to send, not an error */
	r = adapter_callf(a, "process::signal", "{\"sandbox_id\":\"%s\",\"process_id\":\"%s\",\"signal\":\"KILL\"}", id, pid);
	CHECK(json_is_false(json_object_get(r, "sent")));
	json_decref(r);
	/* the logs outlive it */
	r = adapter_callf(a, "process::logs", "{\"sandbox_id\":\"%s\",\"process_id\":\"%s\",\"offset\":0}", id, pid);
	CHECK_STR(jstr(r, "data"), "hello world\n");
	CHECK_STR(jstr(r, "state"), "exited");
	json_decref(r);
	free(pid), free(id);
	sbx_adapter_free(a);
}

TEST(stdin_is_written_then_closed)
{
	struct sbx_adapter *a = make(CFG "}");
	char *id = create(a, "");
	char *pid = start_bg(a, id, "\"cmd\":\"cat\",\"stdin\":\"aGkK\"");
	CHECK(pid != NULL);
	struct fproc *f = fk_last();
	bool closed = false;
	for (int i = 0; i < 200 && !closed; i++) {
		pthread_mutex_lock(&f->lock);
		closed = f->stdin_closed;
		pthread_mutex_unlock(&f->lock);
		usleep(10000);
	}
	CHECK(closed);
	CHECK_STR(f->stdin_seen, "hi\n");
	/* no stdin: EOF from the start */
	char *p2 = start_bg(a, id, "\"cmd\":\"cat\"");
	CHECK(fk_last()->stdin_closed);
	/* bad base64 after admission: S001, and no process */
	int starts = fk_starts;
	json_t *r = adapter_callf(a, "exec", "{\"sandbox_id\":\"%s\",\"background\":true,\"cmd\":\"cat\",\"stdin\":\"!!\"}", id);
	CHECK_STR(jstr(r, "code"), "S001");
	CHECK(strstr(jstr(r, "message"), "stdin base64 decode") != NULL);
	json_decref(r);
	CHECK_INT(fk_starts, starts);
	free(pid), free(p2), free(id);
	sbx_adapter_free(a);
}

TEST(unknown_ids_and_bad_fields)
{
	struct sbx_adapter *a = make(CFG "}");
	char *id = create(a, "");
	char *pid = start_bg(a, id, "\"cmd\":\"sleep\"");
	CHECK(pid != NULL);
	json_t *r = adapter_callf(a, "process::logs", "{\"sandbox_id\":\"%s\",\"process_id\":\"nope\"}", id);
	CHECK_STR(jstr(r, "code"), "S001");
	CHECK(strstr(jstr(r, "message"), "nope") != NULL);
	json_decref(r);
	const char *other = "11111111-2222-4333-8444-555555555555";
	r = adapter_callf(a, "process::wait", "{\"sandbox_id\":\"%s\",\"process_id\":\"%s\"}", other, pid);
	CHECK_STR(jstr(r, "code"), "S002");
	json_decref(r);
	r = adapter_callf(a, "process::list", "{\"sandbox_id\":\"%s\"}", other);
	CHECK_STR(jstr(r, "code"), "S002");
	json_decref(r);
	r = adapter_callf(a, "process::list", "{\"sandbox_id\":\"not-a-uuid\"}");
	CHECK_STR(jstr(r, "code"), "S001");
	json_decref(r);
	r = adapter_callf(a, "process::signal", "{\"sandbox_id\":\"%s\",\"process_id\":\"%s\",\"signal\":\"USR1\"}", id, pid);
	CHECK_STR(jstr(r, "code"), "S001");
	CHECK(strstr(jstr(r, "message"), "USR1") != NULL);
	json_decref(r);
	r = adapter_callf(a, "process::logs", "{\"sandbox_id\":\"%s\",\"process_id\":\"%s\",\"stream\":\"both\"}", id, pid);
	CHECK_STR(jstr(r, "code"), "S001");
	json_decref(r);
	r = adapter_callf(a, "exec", "{\"sandbox_id\":\"%s\",\"background\":true,\"cmd\":\"x\",\"stream\":{}}", id);
	CHECK_STR(jstr(r, "code"), "S001");
	CHECK(strstr(jstr(r, "message"), "exclusive") != NULL);
	json_decref(r);
	/* a spawn failure: S300 and nothing listed */
	r = adapter_callf(a, "exec", "{\"sandbox_id\":\"%s\",\"background\":true,\"cmd\":\"nonexistent\"}", id);
	CHECK_STR(jstr(r, "code"), "S300");
	json_decref(r);
	r = adapter_callf(a, "process::list", "{\"sandbox_id\":\"%s\"}", id);
	CHECK_INT(json_array_size(json_object_get(r, "processes")), 1);
	json_decref(r);
	/* follow without byte channels in this adapter: S300 */
	r = adapter_callf(a, "process::logs", "{\"sandbox_id\":\"%s\",\"process_id\":\"%s\",\"follow\":{\"channel_id\":\"c\","
		  "\"access_key\":\"k\",\"direction\":\"write\"}}", id, pid);
	CHECK_STR(jstr(r, "code"), "S300");
	json_decref(r);
	free(pid), free(id);
	sbx_adapter_free(a);
}

TEST(stop_ends_every_process_and_forgets_them)
{
	struct sbx_adapter *a = make(CFG "}");
	char *id = create(a, "");
	char *p1 = start_bg(a, id, "\"cmd\":\"sleep\"");
	char *p2 = start_bg(a, id, "\"cmd\":\"sleep\"");
	CHECK(p1 != NULL && p2 != NULL);
	CHECK_INT(fk_live_now(), 2);
	json_t *r = adapter_callf(a, "stop", "{\"sandbox_id\":\"%s\"}", id);
	CHECK(json_is_true(json_object_get(r, "stopped")));
	json_decref(r);
	/* the stop returned once the pumps had killed and freed them */
	CHECK_INT(fk_live_now(), 0);
	CHECK_INT(fk_procs[0]->last_signal, SIGKILL);
	CHECK_INT(fk_procs[1]->last_signal, SIGKILL);
	r = adapter_callf(a, "process::list", "{\"sandbox_id\":\"%s\"}", id);
	CHECK_STR(jstr(r, "code"), "S002");
	json_decref(r);
	/* shutdown ends the ones of sandboxes still running */
	char *id2 = create(a, "");
	char *p3 = start_bg(a, id2, "\"cmd\":\"sleep\"");
	CHECK(p3 != NULL);
	CHECK_INT(fk_live_now(), 1);
	sbx_adapter_free(a);
	CHECK_INT(fk_live_now(), 0);
	free(p1), free(p2), free(p3), free(id), free(id2);
}

TEST(follow_streams_the_bytes_after_next_offset_until_the_exit)
{
	struct sbx_adapter *a = make(CFG "}");
	a->streams = (struct sbx_stream_host){ &fw_ops, NULL };
	char *id = create(a, "");
	char *pid = start_bg(a, id, "\"cmd\":\"gen\"");
	struct fproc *f = fk_last();
	emit(f, 1, "first\n", 6);
	CHECK(wait_bytes(a, id, pid, 6));
	json_t *r = adapter_callf(a, "process::logs", "{\"sandbox_id\":\"%s\",\"process_id\":\"%s\",\"offset\":2,\"follow\":{"
			  "\"channel_id\":\"c\",\"access_key\":\"k\",\"direction\":\"write\"}}", id, pid);
	CHECK_STR(jstr(r, "data"), "rst\n");
	CHECK_INT(num(r, "next_offset"), 6);
	json_decref(r);
	struct fwriter *w = fw_last();
	emit(f, 1, "second\n", 7);
	emit(f, 2, "not this stream\n", 16);
	emit(f, 1, "third\n", 6);
	usleep(50000);
	CHECK(!fw_is(w, &w->closed));
	finish(f, 0);
	CHECK(fw_wait(w, &w->closed));
	CHECK(fw_wait(w, &w->freed));
	CHECK_INT(w->len, 13);
	CHECK(memcmp(w->data, "second\nthird\n", 13) == 0);
	CHECK_STR(w->fail, "");
	/* a reader ref is refused by the port: its S-code, no thread */
	r = adapter_callf(a, "process::logs", "{\"sandbox_id\":\"%s\",\"process_id\":\"%s\",\"follow\":{"
		  "\"channel_id\":\"c\",\"access_key\":\"k\",\"direction\":\"read\"}}", id, pid);
	CHECK_STR(jstr(r, "code"), "S001");
	json_decref(r);
	free(pid), free(id);
	sbx_adapter_free(a);
	fw_reset();
}

TEST(keep_alive_while_running_holds_off_the_idle_reaper)
{
	struct sbx_adapter *a = make(CFG "}");
	char *kept = create(a, ",\"idle_timeout_secs\":1,\"keep_alive_while_running\":true");
	char *plain = create(a, ",\"idle_timeout_secs\":1");
	CHECK(kept != NULL && plain != NULL);
	char *p1 = start_bg(a, kept, "\"cmd\":\"sleep\"");
	char *p2 = start_bg(a, plain, "\"cmd\":\"sleep\"");
	CHECK(p1 != NULL && p2 != NULL);
	usleep(1500000);
	/* the plain one is idle despite its process, which goes with it */
	CHECK_INT(reaper_scan(a, false), 1);
	CHECK_INT(fk_live_now(), 1);
	json_t *r = adapter_callf(a, "process::list", "{\"sandbox_id\":\"%s\"}", plain);
	CHECK_STR(jstr(r, "code"), "S002");
	json_decref(r);
	r = adapter_callf(a, "process::list", "{\"sandbox_id\":\"%s\"}", kept);
	CHECK_INT(json_array_size(json_object_get(r, "processes")), 1);
	json_decref(r);
	/* once its process exited, it is idle like any other */
	finish(fk_procs[0], 0);
	usleep(1500000);
	CHECK_INT(reaper_scan(a, false), 1);
	free(p1), free(p2), free(kept), free(plain);
	sbx_adapter_free(a);
}

/* ---- the memory budget ---------------------------------------------------- */

/* The logs' bytes charged to the budget and the processes holding them. */
static uint64_t logs_charged(struct sbx_adapter *a, unsigned *n)
{
	pthread_mutex_lock(&a->mem.lock);
	uint64_t b = a->mem.logs_bytes;
	*n = a->mem.logs;
	pthread_mutex_unlock(&a->mem.lock);
	return b;
}

/* Starts a process in `id` and fills both its 4 KiB rings; -1 with *refused
 * the answer when it was refused. */
static int start_full(struct sbx_adapter *a, const char *id, json_t **refused)
{
	json_t *r = adapter_callf(a, "exec", "{\"sandbox_id\":\"%s\",\"background\":true,\"cmd\":\"yes\"}", id);
	if (jstr(r, "process_id") == NULL) {
		*refused = r;
		return -1;
	}
	json_decref(r);
	char fill[4096];
	memset(fill, 'y', sizeof(fill));
	struct fproc *f = fk_last();
	emit(f, 1, fill, sizeof(fill));
	emit(f, 2, fill, sizeof(fill));
	return 0;
}

TEST(full_rings_of_32_sandboxes_stay_within_the_memory_budget)
{
	/* what one sandbox's VM commits, from an adapter of its own */
	struct sbx_adapter *a = make(CFG "}");
	char *id = create(a, "");
	uint64_t per = 0, limit = 0;
	sbx_mem_budget_read(&a->mem, &per, &limit);
	free(id);
	sbx_adapter_free(a);
	CHECK(per > 0);
	/* room for 32 VMs and 3 MiB of logs: 384 processes' two 4 KiB rings */
	char cfg[256];
	snprintf(cfg, sizeof(cfg), CFG ",\"background_log_bytes\":4096,\"memory_budget_mb\":%" PRIu64 "}",
		 32 * per + 3);
	a = make(cfg);
	char *ids[32];
	for (int i = 0; i < 32; i++)
		CHECK((ids[i] = create(a, "")) != NULL);
	json_t *refused = NULL;
	int started = 0, in = 0;
	for (in = 0; in < 32 && refused == NULL; in++)
		for (int j = 0; j < 16 && start_full(a, ids[in], &refused) == 0; j++)
			started++;
	in--;
	CHECK_INT(started, 384);
	CHECK_INT(in, 24);
	CHECK_STR(jstr(refused, "code"), "S400");
	CHECK(strstr(jstr(refused, "message"), "memory_budget_mb") != NULL);
	CHECK(strstr(jstr(refused, "message"), "background_log_bytes") != NULL);
	json_decref(refused);
	unsigned n = 0;
	CHECK_INT(logs_charged(a, &n), 384 * 8192);
	CHECK_INT(n, 384);
	uint64_t committed = 0;
	sbx_mem_budget_read(&a->mem, &committed, &limit);
	CHECK_INT(committed, limit);
	/* the rings are full: each took 4096 bytes of each stream */
	json_t *r = adapter_callf(a, "process::list", "{\"sandbox_id\":\"%s\"}", ids[23]);
	const char *last = jstr(json_array_get(json_object_get(r, "processes"), 15), "process_id");
	CHECK(last != NULL && wait_bytes(a, ids[23], last, 4096));
	json_decref(r);
	/* 16 exited ones are kept: a new one drops the oldest, and its logs */
	for (int k = 16; k < 32; k++)
		finish(fk_procs[k], 0);
	for (int k = 0; k < 300; k++) {
		json_t *l = adapter_callf(a, "process::list", "{\"sandbox_id\":\"%s\"}", ids[1]);
		bool all = true;
		json_t *rows = json_object_get(l, "processes");
		for (size_t i = 0; i < json_array_size(rows); i++)
			all = all && strcmp(jstr(json_array_get(rows, i), "state"), "exited") == 0;
		json_decref(l);
		if (all)
			break;
		usleep(10000);
	}
	CHECK_INT(start_full(a, ids[1], &refused), 0);
	/* with 15 exited ones kept, the next needs room of its own */
	CHECK_INT(start_full(a, ids[1], &refused), -1);
	CHECK_STR(jstr(refused, "code"), "S400");
	json_decref(refused);
	CHECK_INT(logs_charged(a, &n), 384 * 8192);
	/* a stopped sandbox gives its logs back: the refused one starts 16 */
	r = adapter_callf(a, "stop", "{\"sandbox_id\":\"%s\"}", ids[0]);
	json_decref(r);
	CHECK_INT(logs_charged(a, &n), 368 * 8192);
	for (int j = 0; j < 16; j++)
		CHECK_INT(start_full(a, ids[in], &refused), 0);
	CHECK_INT(start_full(a, ids[in], &refused), -1);
	json_decref(refused);
	for (int i = 0; i < 32; i++) {
		json_decref(adapter_callf(a, "stop", "{\"sandbox_id\":\"%s\"}", ids[i]));
		free(ids[i]);
	}
	CHECK_INT(logs_charged(a, &n), 0);
	CHECK_INT(n, 0);
	sbx_adapter_free(a);
}

/* ---- follows: caps, one thread, a reader that leaves --------------------- */

static int threads_now(void)
{
	DIR *d = opendir("/proc/self/task");
	int n = 0;
	for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;)
		n += e->d_name[0] != '.';
	if (d != NULL)
		closedir(d);
	return n;
}

static json_t *follow(struct sbx_adapter *a, const char *id, const char *pid)
{
	return adapter_callf(a, "process::logs", "{\"sandbox_id\":\"%s\",\"process_id\":\"%s\",\"follow\":{"
			     "\"channel_id\":\"c\",\"access_key\":\"k\",\"direction\":\"write\"}}", id, pid);
}

TEST(a_thousand_follows_meet_the_caps_and_one_thread_serves_them)
{
	struct sbx_adapter *a = make(CFG ",\"max_follows_per_sandbox\":8,\"max_follows\":20}");
	a->streams = (struct sbx_stream_host){ &fw_ops, NULL };
	char *ids[3], *pids[3];
	for (int i = 0; i < 3; i++) {
		ids[i] = create(a, "");
		pids[i] = start_bg(a, ids[i], "\"cmd\":\"tail\"");
		CHECK(pids[i] != NULL);
	}
	int before = threads_now();
	int ok = 0, capped = 0;
	for (int i = 0; i < 1000; i++) {
		json_t *r = follow(a, ids[0], pids[0]);
		if (jstr(r, "data") != NULL)
			ok++;
		else if (strcmp(jstr(r, "code"), "S003") == 0 &&
			 strstr(jstr(r, "message"), "max_follows_per_sandbox: 8") != NULL)
			capped++;
		json_decref(r);
	}
	CHECK_INT(ok, 8);
	CHECK_INT(capped, 992);
	CHECK_INT(fw_n, 8); /* a refused follow opens no channel */
	CHECK_INT(follows_count(a->follows, ids[0]), 8);
	/* one thread serves them all */
	CHECK(threads_now() <= before + 1);
	/* the daemon's cap: 8 + 8 + 4 of 20 */
	for (int i = 0; i < 8; i++)
		json_decref(follow(a, ids[1], pids[1]));
	for (int i = 0; i < 4; i++) {
		json_t *r = follow(a, ids[2], pids[2]);
		CHECK(jstr(r, "data") != NULL);
		json_decref(r);
	}
	json_t *r = follow(a, ids[2], pids[2]);
	CHECK_STR(jstr(r, "code"), "S003");
	CHECK(strstr(jstr(r, "message"), "max_follows: 20") != NULL);
	json_decref(r);
	CHECK_INT(follows_count(a->follows, NULL), 20);
	/* a reader leaves: its follow ends (the writer freed, no Close) and
	 * makes room for another */
	struct fwriter *w = fw_all[3];
	close(w->sock[1]);
	w->sock[1] = -1;
	CHECK(fw_wait(w, &w->freed));
	CHECK(!fw_is(w, &w->closed));
	for (int i = 0; i < 300 && follows_count(a->follows, ids[0]) > 7; i++)
		usleep(10000);
	CHECK_INT(follows_count(a->follows, ids[0]), 7);
	r = follow(a, ids[0], pids[0]);
	CHECK(jstr(r, "data") != NULL);
	json_decref(r);
	/* the rest end with their processes: all of what they wrote, a Close */
	struct fproc *f[3];
	for (int i = 0; i < 3; i++) {
		f[i] = fk_procs[i];
		emit(f[i], 1, "bye\n", 4);
		finish(f[i], 0);
	}
	for (int i = 0; i < fw_n; i++) {
		if (i == 3)
			continue;
		CHECK(fw_wait(fw_all[i], &fw_all[i]->freed));
		CHECK(fw_is(fw_all[i], &fw_all[i]->closed));
		CHECK_INT(fw_all[i]->len, 4);
	}
	CHECK_INT(follows_count(a->follows, NULL), 0);
	for (int i = 0; i < 3; i++)
		free(ids[i]), free(pids[i]);
	sbx_adapter_free(a);
	fw_reset();
}
