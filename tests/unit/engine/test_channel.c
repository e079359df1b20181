/* Engine byte channels against an in-process WebSocket server that plays
 * the engine: engine::channels::create, the write end's framing and Close,
 * the read end's end-of-stream and abort rules, background tasks. */
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine_channel.h"
#include "harness.h"
#include "ws_test_server.h"

#define WAIT_MS 8000
#define CH_ID "0b7c1e2a-1111-4222-8333-444455556666"
#define CH_KEY "k/ey+1"

static const struct channel_ref ref = { CH_ID, CH_KEY, "read" };

/* An engine client that is never started: channel ends only need its URL. */
static struct engine *idle_engine(struct test_server *s)
{
	struct engine_options o = { .url = s->url, .worker_name = "unit" };
	sbx_error_t err = NULL;
	struct engine *e = engine_new(&o, &err);
	sbx_error_free(&err);
	return e;
}

/* A second server handle on the same listening socket: the channel's own
 * connection, next to the engine's main one. */
static void side_server(struct test_server *side, const struct test_server *main_srv)
{
	memset(side, 0, sizeof(*side));
	side->listen_fd = main_srv->listen_fd;
	side->fd = -1;
}

static void side_close(struct test_server *side)
{
	side->listen_fd = -1;
	ts_stop(side);
}

TEST(ref_parse_accepts_and_rejects)
{
	sbx_error_t err = NULL;
	struct channel_ref r;
	json_t *ok = json_pack("{s:s, s:s, s:s}", "channel_id", "c", "access_key", "k", "direction", "write");
	CHECK_INT(channel_ref_parse(ok, &r, &err), 0);
	CHECK_STR(r.channel_id, "c");
	CHECK_STR(r.access_key, "k");
	CHECK_STR(r.direction, "write");
	json_t *back = channel_ref_json(&r);
	CHECK(json_equal(back, ok));
	json_decref(back);
	json_decref(ok);
	channel_ref_free(&r);

	char longid[CHANNEL_ID_MAX + 2];
	memset(longid, 'a', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	json_t *bad[] = {
		json_string("x"),
		json_pack("{s:s, s:s}", "channel_id", "c", "access_key", "k"),
		json_pack("{s:s, s:s, s:s}", "channel_id", "c", "access_key", "k", "direction", "both"),
		json_pack("{s:s, s:i, s:s}", "channel_id", "c", "access_key", 7, "direction", "read"),
		json_pack("{s:s, s:s, s:s}", "channel_id", "", "access_key", "k", "direction", "read"),
		json_pack("{s:s, s:s, s:s}", "channel_id", longid, "access_key", "k", "direction", "read"),
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_INT(channel_ref_parse(bad[i], &r, &err), -1);
		CHECK(r.channel_id == NULL && r.access_key == NULL);
		sbx_error_free(&err);
		json_decref(bad[i]);
	}
}

struct create_call {
	struct engine *e;
	int rc;
	struct channel_ref w, r;
	sbx_error_t err;
};

static void *do_create(void *p)
{
	struct create_call *c = p;
	c->rc = channel_create(c->e, NULL, 0, &c->w, &c->r, &c->err);
	return NULL;
}

/* Answers the engine::channels::create call the client sends. */
static int answer_create(struct test_server *s, json_t *result, json_t *error)
{
	json_t *m = ts_recv(s, WAIT_MS);
	if (m == NULL)
		return -1;
	const char *fid = json_string_value(json_object_get(m, "function_id"));
	json_int_t bs = json_integer_value(json_object_get(json_object_get(m, "data"), "buffer_size"));
	int ok = fid != NULL && strcmp(fid, "engine::channels::create") == 0 && bs == CHANNEL_DEFAULT_BUFFER;
	json_t *reply = json_pack("{s:s, s:O, s:s}", "type", "invocationresult", "invocation_id",
				  json_object_get(m, "invocation_id"), "function_id", "engine::channels::create");
	json_object_set_new(reply, result != NULL ? "result" : "error", result != NULL ? result : error);
	json_decref(m);
	ts_send_json(s, reply);
	return ok ? 0 : -1;
}

TEST(create_calls_the_engine)
{
	struct test_server s;
	CHECK_INT(ts_start(&s), 0);
	struct engine *e = idle_engine(&s);
	sbx_error_t err = NULL;
	CHECK(e != NULL);
	CHECK_INT(engine_start(e, &err), 0);
	CHECK_INT(ts_accept(&s, WAIT_MS), 0);
	ts_send_json(&s, json_pack("{s:s, s:s, s:s}", "type", "workerregistered", "worker_id", "w", "reattach_token", "t"));
	json_t *reg = ts_recv(&s, WAIT_MS); /* engine::workers::register */
	CHECK(reg != NULL);
	json_decref(reg);
	CHECK_INT(engine_wait_connected(e, WAIT_MS, &err), 0);

	struct create_call c = { .e = e };
	pthread_t t;
	pthread_create(&t, NULL, do_create, &c);
	json_t *res = json_pack("{s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}}", "writer", "channel_id", "c1", "access_key", "k1",
				"direction", "write", "reader", "channel_id", "c1", "access_key", "k1", "direction", "read");
	CHECK_INT(answer_create(&s, res, NULL), 0);
	pthread_join(t, NULL);
	CHECK_INT(c.rc, 0);
	CHECK_STR(c.w.direction, "write");
	CHECK_STR(c.r.direction, "read");
	CHECK_STR(c.r.channel_id, "c1");
	CHECK_STR(c.w.access_key, "k1");
	channel_ref_free(&c.w);
	channel_ref_free(&c.r);

	/* An error answer, and a result without refs, both fail cleanly. */
	struct create_call c2 = { .e = e };
	pthread_create(&t, NULL, do_create, &c2);
	CHECK_INT(answer_create(&s, NULL, json_pack("{s:s, s:s}", "code", "E", "message", "no channels here")), 0);
	pthread_join(t, NULL);
	CHECK_INT(c2.rc, -1);
	CHECK(strstr(sbx_error_msg(c2.err), "no channels here") != NULL);
	sbx_error_free(&c2.err);

	struct create_call c3 = { .e = e };
	pthread_create(&t, NULL, do_create, &c3);
	CHECK_INT(answer_create(&s, json_pack("{s:s}", "writer", "nope"), NULL), 0);
	pthread_join(t, NULL);
	CHECK_INT(c3.rc, -1);
	CHECK(c3.w.channel_id == NULL && c3.r.channel_id == NULL);
	sbx_error_free(&c3.err);

	engine_free(e);
	ts_stop(&s);
}

struct writer_job {
	struct engine *e;
	size_t len;
	int rc;
	bool fail;
};

static void *do_write(void *p)
{
	struct writer_job *j = p;
	sbx_error_t err = NULL;
	struct channel_ref wref = { CH_ID, CH_KEY, "write" };
	struct channel_writer *w = channel_writer_open(j->e, &wref, &err);
	j->rc = -1;
	if (w != NULL) {
		uint8_t *buf = malloc(j->len);
		for (size_t i = 0; i < j->len; i++)
			buf[i] = (uint8_t)(i * 7);
		j->rc = channel_writer_send(w, buf, j->len, &err);
		if (j->rc == 0 && j->fail)
			j->rc = channel_writer_fail(w, "disk on fire", &err);
		if (j->rc == 0)
			j->rc = channel_writer_close(w, &err);
		free(buf);
	}
	channel_writer_free(w);
	sbx_error_free(&err);
	return NULL;
}

/* Whether the next frames are the error frame `text` and a normal Close. */
static bool got_end(struct test_server *ch, const char *text)
{
	enum ws_opcode op;
	uint8_t *d = NULL;
	size_t n = 0;
	if (ts_recv_frame(ch, WAIT_MS, &op, &d, &n) != 1)
		return false;
	d[n] = '\0';
	bool ok = op == WS_OP_TEXT && strcmp((char *)d, text) == 0;
	free(d);
	if (ts_recv_frame(ch, WAIT_MS, &op, &d, &n) != 1)
		return false;
	ok = ok && op == WS_OP_CLOSE && n == 2 && ((d[0] << 8) | d[1]) == 1000;
	free(d);
	return ok;
}

TEST(writer_frames_64k_then_close)
{
	struct test_server s, ch;
	CHECK_INT(ts_start(&s), 0);
	struct engine *e = idle_engine(&s);
	side_server(&ch, &s);
	struct writer_job j = { .e = e, .len = 150 * 1024, .fail = true };
	pthread_t t;
	pthread_create(&t, NULL, do_write, &j);
	CHECK_INT(ts_accept(&ch, WAIT_MS), 0);
	CHECK_STR(ch.request_line, "GET /ws/channels/" CH_ID "?key=k%2Fey%2B1&dir=write HTTP/1.1");

	size_t sizes[3] = { 65536, 65536, 150 * 1024 - 131072 }, total = 0;
	for (int i = 0; i < 3; i++) {
		enum ws_opcode op;
		uint8_t *d;
		size_t n;
		CHECK_INT(ts_recv_frame(&ch, WAIT_MS, &op, &d, &n), 1);
		CHECK_INT(op, WS_OP_BINARY);
		CHECK_INT(n, sizes[i]);
		CHECK_INT(d[0], (uint8_t)(total * 7));
		CHECK_INT(d[n - 1], (uint8_t)((total + n - 1) * 7));
		total += n;
		free(d);
	}
	CHECK(got_end(&ch, "{\"error\":\"disk on fire\"}"));
	uint8_t normal[2] = { 0x03, 0xe8 };
	ts_send_frame(&ch, WS_OP_CLOSE, normal, 2);
	pthread_join(t, NULL);
	CHECK_INT(j.rc, 0);
	side_close(&ch);
	engine_free(e);
	ts_stop(&s);
}

struct open_job {
	struct engine *e;
	struct channel_writer *w;
};

static void *do_open(void *p)
{
	struct open_job *j = p;
	sbx_error_t err = NULL;
	struct channel_ref wref = { CH_ID, CH_KEY, "write" };
	j->w = channel_writer_open(j->e, &wref, &err);
	sbx_error_free(&err);
	return NULL;
}

/* A writer whose upgrade `ch` accepted. */
static struct channel_writer *open_side(struct engine *e, struct test_server *ch)
{
	struct open_job j = { .e = e };
	pthread_t t;
	pthread_create(&t, NULL, do_open, &j);
	int rc = ts_accept(ch, WAIT_MS);
	pthread_join(t, NULL);
	if (rc == 0)
		return j.w;
	channel_writer_free(j.w);
	return NULL;
}

TEST(writer_queues_and_flushes_without_blocking_then_ends)
{
	struct test_server s, ch;
	CHECK_INT(ts_start(&s), 0);
	struct engine *e = idle_engine(&s);
	side_server(&ch, &s);
	struct channel_writer *w = open_side(e, &ch);
	CHECK(w != NULL);
	CHECK(channel_writer_fd(w) >= 0);
	sbx_error_t err = NULL;
	static uint8_t buf[65536];
	/* the engine reads nothing: the socket fills up and flush says so
	 * instead of waiting */
	int queued = 0, r = 1;
	short ev = 0;
	while (r == 1 && queued < 4096) {
		memset(buf, queued & 0xff, sizeof(buf));
		CHECK_INT(channel_writer_queue(w, buf, sizeof(buf), &err), 0);
		queued++;
		r = channel_writer_flush(w, &ev, &err);
	}
	CHECK_INT(r, 0);
	CHECK((ev & POLLOUT) != 0);
	CHECK(queued < 4096);
	CHECK(!channel_writer_gone(w));
	CHECK_INT(channel_writer_queue_end(w, "gone fishing", &err), 0);
	/* the engine reads: every frame whole and in order, then the end */
	for (int i = 0; i < queued; i++) {
		enum ws_opcode op;
		uint8_t *d = NULL;
		size_t n = 0;
		int got = 0;
		for (int k = 0; k < 400 && got == 0; k++) {
			channel_writer_flush(w, &ev, &err);
			got = ts_recv_frame(&ch, 20, &op, &d, &n);
		}
		CHECK_INT(got, 1);
		CHECK_INT(op, WS_OP_BINARY);
		CHECK_INT(n, sizeof(buf));
		CHECK(d != NULL && d[0] == (uint8_t)(i & 0xff) && d[n - 1] == (uint8_t)(i & 0xff));
		free(d);
	}
	CHECK_INT(channel_writer_flush(w, &ev, &err), 1);
	CHECK(got_end(&ch, "{\"error\":\"gone fishing\"}"));
	/* nothing may follow the Close */
	CHECK_INT(channel_writer_queue(w, buf, 1, &err), -1);
	sbx_error_free(&err);
	/* the engine's answer ends it */
	CHECK(!channel_writer_gone(w));
	uint8_t normal[2] = { 0x03, 0xe8 };
	ts_send_frame(&ch, WS_OP_CLOSE, normal, 2);
	bool gone = false;
	for (int k = 0; k < 400 && !gone; k++) {
		struct pollfd p = { .fd = channel_writer_fd(w), .events = POLLIN };
		poll(&p, 1, 20);
		gone = channel_writer_gone(w);
	}
	CHECK(gone);
	channel_writer_free(w);
	side_close(&ch);
	engine_free(e);
	ts_stop(&s);
}

TEST(writer_sees_the_engine_close_it_when_the_reader_left)
{
	struct test_server s, ch;
	CHECK_INT(ts_start(&s), 0);
	struct engine *e = idle_engine(&s);
	side_server(&ch, &s);
	struct channel_writer *w = open_side(e, &ch);
	CHECK(w != NULL);
	CHECK(!channel_writer_gone(w));
	/* the engine closes the writer once its reader left (1000, "reader gone") */
	uint8_t bye[] = { 0x03, 0xe8, 'r', 'e', 'a', 'd', 'e', 'r', ' ', 'g', 'o', 'n', 'e' };
	ts_send_frame(&ch, WS_OP_CLOSE, bye, sizeof(bye));
	struct pollfd p = { .fd = channel_writer_fd(w), .events = POLLIN };
	CHECK_INT(poll(&p, 1, WAIT_MS), 1);
	CHECK(channel_writer_gone(w));
	/* it answered the Close: nothing more may be queued */
	sbx_error_t err = NULL;
	CHECK_INT(channel_writer_queue(w, "x", 1, &err), -1);
	sbx_error_free(&err);
	enum ws_opcode op;
	uint8_t *d;
	size_t n;
	CHECK_INT(ts_recv_frame(&ch, WAIT_MS, &op, &d, &n), 1);
	CHECK_INT(op, WS_OP_CLOSE);
	free(d);
	/* a dropped connection counts as gone too */
	struct channel_writer *w2 = open_side(e, &ch);
	CHECK(w2 != NULL);
	ts_drop(&ch);
	p = (struct pollfd){ .fd = channel_writer_fd(w2), .events = POLLIN };
	CHECK_INT(poll(&p, 1, WAIT_MS), 1);
	CHECK(channel_writer_gone(w2));
	channel_writer_free(w2);
	channel_writer_free(w);
	side_close(&ch);
	engine_free(e);
	ts_stop(&s);
}

TEST(writer_open_fails_without_engine)
{
	struct test_server s;
	CHECK_INT(ts_start(&s), 0);
	struct engine *e = idle_engine(&s);
	close(s.listen_fd); /* nobody listens any more */
	s.listen_fd = -1;
	sbx_error_t err = NULL;
	struct channel_ref wref = { CH_ID, CH_KEY, "write" };
	CHECK(channel_writer_open(e, &wref, &err) == NULL);
	CHECK(strstr(sbx_error_msg(err), CH_ID) != NULL);
	sbx_error_free(&err);
	engine_free(e);
	ts_stop(&s);
}

/* What a reader collected, and how its stream ended. */
struct reader_job {
	struct engine *e;
	int idle_ms;
	uint8_t got[256];
	size_t len;
	int rc; /* 0 normal end, -1 failed */
	char scode[8];
	char msg[256];
};

static void *do_read(void *p)
{
	struct reader_job *j = p;
	sbx_error_t err = NULL;
	struct channel_reader *r = channel_reader_open(j->e, &ref, j->idle_ms, &err);
	j->rc = -1;
	for (;;) {
		if (r == NULL)
			break;
		const uint8_t *d;
		ssize_t n = channel_reader_next(r, &d, &err);
		if (n <= 0) {
			j->rc = (int)n;
			break;
		}
		if (j->len + (size_t)n <= sizeof(j->got)) {
			memcpy(j->got + j->len, d, (size_t)n);
			j->len += (size_t)n;
		}
	}
	if (err != NULL) {
		snprintf(j->scode, sizeof(j->scode), "%s", err->scode);
		snprintf(j->msg, sizeof(j->msg), "%s", sbx_error_msg(err));
	}
	sbx_error_free(&err);
	channel_reader_free(r);
	return NULL;
}

/* Starts a reader, accepts its socket and checks the URL it used. */
static int start_reader(struct test_server *s, struct test_server *ch, struct reader_job *j, pthread_t *t)
{
	if (ts_start(s) < 0)
		return -1;
	j->e = idle_engine(s);
	side_server(ch, s);
	pthread_create(t, NULL, do_read, j);
	if (ts_accept(ch, WAIT_MS) < 0)
		return -1;
	return strcmp(ch->request_line, "GET /ws/channels/" CH_ID "?key=k%2Fey%2B1&dir=read HTTP/1.1") == 0 ? 0 : -1;
}

static void stop_reader(struct test_server *s, struct test_server *ch, struct reader_job *j, pthread_t t)
{
	pthread_join(t, NULL);
	side_close(ch);
	engine_free(j->e);
	ts_stop(s);
}

TEST(reader_concatenates_until_normal_close)
{
	struct test_server s, ch;
	struct reader_job j = { 0 };
	pthread_t t;
	CHECK_INT(start_reader(&s, &ch, &j, &t), 0);
	ts_send_frame(&ch, WS_OP_BINARY, "hello ", 6);
	ts_send_frame(&ch, WS_OP_TEXT, "{\"note\":\"out of band\"}", 22);
	ts_send_frame(&ch, WS_OP_BINARY, "", 0);
	ts_send_frame(&ch, WS_OP_BINARY, "world", 5);
	ts_send_frame(&ch, WS_OP_CLOSE, "\x03\xe8", 2);
	stop_reader(&s, &ch, &j, t);
	CHECK_INT(j.rc, 0);
	CHECK_INT(j.len, 11);
	CHECK(memcmp(j.got, "hello world", 11) == 0);
}

TEST(reader_close_without_status_is_normal)
{
	struct test_server s, ch;
	struct reader_job j = { 0 };
	pthread_t t;
	CHECK_INT(start_reader(&s, &ch, &j, &t), 0);
	ts_send_frame(&ch, WS_OP_BINARY, "x", 1);
	ts_send_frame(&ch, WS_OP_CLOSE, NULL, 0);
	stop_reader(&s, &ch, &j, t);
	CHECK_INT(j.rc, 0);
	CHECK_INT(j.len, 1);
}

TEST(reader_error_frame_aborts_with_s218)
{
	struct test_server s, ch;
	struct reader_job j = { 0 };
	pthread_t t;
	CHECK_INT(start_reader(&s, &ch, &j, &t), 0);
	ts_send_frame(&ch, WS_OP_BINARY, "part", 4);
	ts_send_frame(&ch, WS_OP_TEXT, "{\"error\":\"upload cancelled\"}", 28);
	ts_send_frame(&ch, WS_OP_CLOSE, "\x03\xe8", 2);
	stop_reader(&s, &ch, &j, t);
	CHECK_INT(j.rc, -1);
	CHECK_STR(j.scode, "S218");
	CHECK(strstr(j.msg, "upload cancelled") != NULL);
}

TEST(reader_dropped_socket_aborts_with_s218)
{
	struct test_server s, ch;
	struct reader_job j = { 0 };
	pthread_t t;
	CHECK_INT(start_reader(&s, &ch, &j, &t), 0);
	ts_send_frame(&ch, WS_OP_BINARY, "part", 4);
	ts_drop(&ch);
	stop_reader(&s, &ch, &j, t);
	CHECK_INT(j.rc, -1);
	CHECK_STR(j.scode, "S218");
	CHECK_INT(j.len, 4);
}

TEST(reader_abnormal_close_status_aborts)
{
	struct test_server s, ch;
	struct reader_job j = { 0 };
	pthread_t t;
	CHECK_INT(start_reader(&s, &ch, &j, &t), 0);
	ts_send_frame(&ch, WS_OP_CLOSE, "\x03\xf3", 2); /* 1011 */
	stop_reader(&s, &ch, &j, t);
	CHECK_INT(j.rc, -1);
	CHECK_STR(j.scode, "S218");
	CHECK(strstr(j.msg, "1011") != NULL);
}

TEST(reader_stall_times_out_with_s218)
{
	struct test_server s, ch;
	struct reader_job j = { .idle_ms = 1000 };
	pthread_t t;
	CHECK_INT(start_reader(&s, &ch, &j, &t), 0);
	ts_send_frame(&ch, WS_OP_BINARY, "a", 1);
	stop_reader(&s, &ch, &j, t);
	CHECK_INT(j.rc, -1);
	CHECK_STR(j.scode, "S218");
	CHECK(strstr(j.msg, "no data on the channel for 1 s") != NULL);
}

/* idle_ms -1: a pause of several of the reader's wait slices (1 s) and
 * longer than an idle limit of 1 s is not a stall. */
TEST(reader_without_idle_limit_waits_out_a_pause)
{
	struct test_server s, ch;
	struct reader_job j = { .idle_ms = -1 };
	pthread_t t;
	CHECK_INT(start_reader(&s, &ch, &j, &t), 0);
	ts_send_frame(&ch, WS_OP_BINARY, "a", 1);
	usleep(3500 * 1000);
	ts_send_frame(&ch, WS_OP_BINARY, "b", 1);
	ts_send_frame(&ch, WS_OP_CLOSE, "\x03\xe8", 2);
	stop_reader(&s, &ch, &j, t);
	CHECK_INT(j.rc, 0);
	CHECK_INT(j.len, 2);
	CHECK(memcmp(j.got, "ab", 2) == 0);
}

TEST(reader_rejects_oversized_frame)
{
	struct test_server s, ch;
	struct reader_job j = { 0 };
	pthread_t t;
	CHECK_INT(start_reader(&s, &ch, &j, &t), 0);
	size_t big = CHANNEL_IN_FRAME_MAX + 1;
	uint8_t *buf = calloc(1, big);
	ts_send_frame(&ch, WS_OP_BINARY, buf, big);
	free(buf);
	stop_reader(&s, &ch, &j, t);
	CHECK_INT(j.rc, -1);
	CHECK_STR(j.scode, "S218");
	CHECK_INT(j.len, 0);
}

static pthread_mutex_t bg_lock = PTHREAD_MUTEX_INITIALIZER;
static int bg_done;

static void bg_task(void *arg)
{
	usleep(200 * 1000);
	pthread_mutex_lock(&bg_lock);
	bg_done = *(int *)arg;
	pthread_mutex_unlock(&bg_lock);
}

TEST(engine_free_waits_for_background_tasks)
{
	struct test_server s;
	CHECK_INT(ts_start(&s), 0);
	struct engine *e = idle_engine(&s);
	static int value = 42;
	sbx_error_t err = NULL;
	CHECK(engine_cancel_fd(e) >= 0);
	CHECK_INT(engine_run_background(e, bg_task, &value, &err), 0);
	engine_free(e);
	pthread_mutex_lock(&bg_lock);
	int done = bg_done;
	pthread_mutex_unlock(&bg_lock);
	CHECK_INT(done, 42);
	ts_stop(&s);
}
