/* The engine client against an in-process WebSocket server on loopback. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/uuid.h"
#include "engine/engine.h"
#include "harness.h"
#include "ws_test_server.h"

#define WAIT_MS 8000
#define TP "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static pthread_mutex_t slow_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t slow_cond = PTHREAD_COND_INITIALIZER;
static int slow_release;

static int h_echo(void *ud, const struct engine_invocation *inv, json_t *data, json_t **out)
{
	*out = json_pack("{s:O, s:s}", "echo", data, "tp", inv->traceparent ? inv->traceparent : "");
	return 0;
}

static int h_fail(void *ud, const struct engine_invocation *inv, json_t *data, json_t **out)
{
	*out = json_pack("{s:s, s:s}", "code", "E_TEST", "message", "boom");
	return -1;
}

static int h_slow(void *ud, const struct engine_invocation *inv, json_t *data, json_t **out)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	pthread_mutex_lock(&slow_lock);
	while (!slow_release && pthread_cond_timedwait(&slow_cond, &slow_lock, &ts) == 0)
		;
	pthread_mutex_unlock(&slow_lock);
	*out = json_pack("{s:b}", "slow", 1);
	return 0;
}

/* Calls other::fn from inside a handler: the trace context must follow. */
static int h_call(void *ud, const struct engine_invocation *inv, json_t *data, json_t **out)
{
	json_t *res = NULL, *ebody = NULL;
	sbx_error_t err = NULL;
	int r = engine_call(inv->engine, inv, "other::fn", data, 5000, &res, &ebody, &err);
	sbx_error_free(&err);
	if (r != 0) {
		json_decref(ebody);
		*out = json_pack("{s:s, s:s}", "code", "E_CALL", "message", "inner call failed");
		return -1;
	}
	*out = res;
	return 0;
}

static void set_slow(int release)
{
	pthread_mutex_lock(&slow_lock);
	slow_release = release;
	pthread_cond_broadcast(&slow_cond);
	pthread_mutex_unlock(&slow_lock);
}

static const char *str(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static const struct {
	const char *id;
	engine_handler_fn fn;
	bool quick;
} fns[] = { { "test::echo", h_echo, false }, { "test::fail", h_fail, false }, { "test::slow", h_slow, false },
	    { "test::call", h_call, false }, { "test::quick", h_echo, true } };

/* Set by the standby test: the client waits for the worker's lease. */
static bool wait_for_lease;
/* Set by the headers test: extra upgrade headers. */
static const char *upgrade_headers;

static struct engine *new_engine(struct test_server *s, int max)
{
	struct engine_options o = { .url = s->url, .worker_name = "unit", .worker_version = "9.9",
				    .description = "unit test worker", .max_concurrent_invocations = max,
				    .wait_for_lease = wait_for_lease, .headers = upgrade_headers };
	sbx_error_t err = NULL;
	struct engine *e = engine_new(&o, &err);
	if (e == NULL)
		return NULL;
	json_t *schema = json_pack("{s:s}", "type", "object");
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		struct engine_function f = { .id = fns[i].id, .description = "d", .request_format = schema,
					     .response_format = schema, .handler = fns[i].fn, .quick = fns[i].quick };
		engine_add_function(e, &f, &err);
	}
	json_decref(schema);
	return e;
}

/* Accepts the client, greets it and consumes its registration frames. */
static int accept_registered(struct test_server *s, const char *worker_id)
{
	if (ts_accept(s, WAIT_MS) < 0)
		return -1;
	char token[64];
	snprintf(token, sizeof(token), "tok-%s", worker_id);
	ts_send_json(s, json_pack("{s:s, s:s, s:s}", "type", "workerregistered", "worker_id", worker_id,
				  "reattach_token", token));
	for (size_t i = 0; i < 1 + sizeof(fns) / sizeof(fns[0]); i++) {
		json_t *m = ts_recv(s, WAIT_MS);
		if (m == NULL)
			return -1;
		json_decref(m);
	}
	return 0;
}

static struct engine *up(struct test_server *s, int max)
{
	if (ts_start(s) < 0)
		return NULL;
	struct engine *e = new_engine(s, max);
	sbx_error_t err = NULL;
	if (e == NULL || engine_start(e, &err) < 0 || accept_registered(s, "11111111-1111-4111-8111-111111111111") < 0 ||
	    engine_wait_connected(e, WAIT_MS, &err) < 0) {
		sbx_error_free(&err);
		engine_free(e);
		ts_stop(s);
		return NULL;
	}
	return e;
}

static void down(struct test_server *s, struct engine *e)
{
	set_slow(1);
	engine_stop(e);
	engine_free(e);
	ts_stop(s);
	set_slow(0);
}

static void invoke(struct test_server *s, const char *id, const char *fn, json_t *data)
{
	json_t *m = json_pack("{s:s, s:s, s:o}", "type", "invokefunction", "function_id", fn, "data", data);
	if (id != NULL)
		json_object_set_new(m, "invocation_id", json_string(id));
	json_object_set_new(m, "traceparent", json_string(TP));
	ts_send_json(s, m);
}

TEST(registers_worker_before_functions)
{
	struct test_server s;
	CHECK_INT(ts_start(&s), 0);
	struct engine *e = new_engine(&s, 0);
	CHECK(e != NULL);
	sbx_error_t err = NULL;
	CHECK_INT(engine_start(e, &err), 0);
	CHECK_INT(ts_accept(&s, WAIT_MS), 0);
	ts_send_json(&s, json_pack("{s:s, s:s, s:s}", "type", "workerregistered", "worker_id", "w1", "reattach_token", "t1"));

	json_t *m = ts_recv(&s, WAIT_MS);
	CHECK(m != NULL);
	CHECK_STR(str(m, "type"), "invokefunction");
	CHECK_STR(str(m, "function_id"), "engine::workers::register");
	CHECK_STR(str(json_object_get(m, "action"), "type"), "void");
	CHECK(json_object_get(m, "invocation_id") == NULL);
	json_t *d = json_object_get(m, "data");
	CHECK_STR(str(d, "runtime"), "c");
	CHECK_STR(str(d, "name"), "unit");
	CHECK_STR(str(d, "version"), "9.9");
	CHECK_STR(str(d, "description"), "unit test worker");
	CHECK(str(d, "os") != NULL && strlen(str(d, "os")) > 0);
	CHECK_INT(json_integer_value(json_object_get(d, "pid")), getpid());
	json_decref(m);

	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		m = ts_recv(&s, WAIT_MS);
		CHECK(m != NULL);
		CHECK_STR(str(m, "type"), "registerfunction");
		CHECK_STR(str(m, "id"), fns[i].id);
		CHECK_STR(str(m, "description"), "d");
		CHECK_STR(str(json_object_get(m, "request_format"), "type"), "object");
		CHECK_STR(str(json_object_get(m, "response_format"), "type"), "object");
		json_decref(m);
	}
	CHECK_INT(engine_wait_connected(e, WAIT_MS, &err), 0);

	/* A function added while connected is registered at once. */
	struct engine_function late = { .id = "test::late", .handler = h_echo };
	CHECK_INT(engine_add_function(e, &late, &err), 0);
	m = ts_recv(&s, WAIT_MS);
	CHECK(m != NULL);
	CHECK_STR(str(m, "type"), "registerfunction");
	CHECK_STR(str(m, "id"), "test::late");
	json_decref(m);
	/* Duplicates are refused locally. */
	CHECK_INT(engine_add_function(e, &late, &err), -1);
	sbx_error_free(&err);
	down(&s, e);
}

TEST(replies_exactly_once_with_ids_and_trace)
{
	struct test_server s;
	struct engine *e = up(&s, 0);
	CHECK(e != NULL);
	/* Upper-case id on the wire: the reply carries the canonical form. */
	invoke(&s, "AAAAAAAA-1111-4111-8111-111111111111", "test::echo", json_pack("{s:i, s:s}", "x", 7, "_caller_worker_id", "w9"));
	json_t *m = ts_recv(&s, WAIT_MS);
	CHECK(m != NULL);
	CHECK_STR(str(m, "type"), "invocationresult");
	CHECK_STR(str(m, "invocation_id"), "aaaaaaaa-1111-4111-8111-111111111111");
	CHECK_STR(str(m, "function_id"), "test::echo");
	CHECK_STR(str(m, "traceparent"), TP);
	json_t *r = json_object_get(m, "result");
	CHECK_INT(json_integer_value(json_object_get(json_object_get(r, "echo"), "x")), 7);
	CHECK_STR(str(json_object_get(r, "echo"), "_caller_worker_id"), "w9");
	CHECK_STR(str(r, "tp"), TP);
	CHECK(json_object_get(m, "error") == NULL);
	json_decref(m);

	invoke(&s, "bbbbbbbb-1111-4111-8111-111111111111", "test::fail", json_null());
	m = ts_recv(&s, WAIT_MS);
	CHECK(m != NULL);
	CHECK_STR(str(m, "invocation_id"), "bbbbbbbb-1111-4111-8111-111111111111");
	CHECK_STR(str(json_object_get(m, "error"), "code"), "E_TEST");
	CHECK_STR(str(json_object_get(m, "error"), "message"), "boom");
	CHECK(json_object_get(m, "result") == NULL);
	json_decref(m);

	invoke(&s, "cccccccc-1111-4111-8111-111111111111", "nope::missing", json_null());
	m = ts_recv(&s, WAIT_MS);
	CHECK(m != NULL);
	CHECK_STR(str(m, "function_id"), "nope::missing");
	CHECK_STR(str(json_object_get(m, "error"), "code"), "function_not_found");
	json_decref(m);

	/* Fire-and-forget: the handler runs, nothing is sent back. */
	invoke(&s, NULL, "test::echo", json_null());
	/* Malformed frames are dropped without an answer or a disconnect. */
	ts_send_text(&s, "{not json");
	ts_send_text(&s, "[1,2]");
	ts_send_text(&s, "{\"no\":\"type\"}");
	ts_send_text(&s, "   ");
	invoke(&s, "not-a-uuid", "test::echo", json_null());
	ts_send_text(&s, "{\"type\":\"invokefunction\",\"invocation_id\":\"dddddddd-1111-4111-8111-111111111111\"}");
	ts_send_text(&s, "{\"type\":\"invokefunction\",\"invocation_id\":5,\"function_id\":\"test::echo\",\"data\":1}");
	ts_send_text(&s, "{\"type\":\"invocationresult\",\"invocation_id\":\"eeeeeeee-1111-4111-8111-111111111111\","
			 "\"function_id\":\"x\",\"result\":1}");
	ts_send_frame(&s, WS_OP_BINARY, "\xff\xfe", 2);
	ts_send_text(&s, "{\"type\":\"ping\"}");
	m = ts_recv(&s, WAIT_MS);
	CHECK(m != NULL);
	CHECK_STR(str(m, "type"), "pong");
	json_decref(m);
	/* And nothing else arrives: every invocation got exactly one reply. */
	m = ts_recv(&s, 300);
	CHECK(m == NULL);
	down(&s, e);
}

TEST(slow_handler_does_not_delay_another)
{
	struct test_server s;
	struct engine *e = up(&s, 0);
	CHECK(e != NULL);
	invoke(&s, "11111111-aaaa-4111-8111-111111111111", "test::slow", json_null());
	invoke(&s, "22222222-aaaa-4111-8111-111111111111", "test::echo", json_null());
	json_t *m = ts_recv(&s, WAIT_MS);
	CHECK(m != NULL);
	CHECK_STR(str(m, "invocation_id"), "22222222-aaaa-4111-8111-111111111111");
	json_decref(m);
	set_slow(1);
	m = ts_recv(&s, WAIT_MS);
	CHECK(m != NULL);
	CHECK_STR(str(m, "invocation_id"), "11111111-aaaa-4111-8111-111111111111");
	CHECK(json_is_true(json_object_get(json_object_get(m, "result"), "slow")));
	json_decref(m);
	down(&s, e);
}

static json_t *busy_body(const char *message)
{
	return json_pack("{s:s, s:s}", "code", "S400-test", "message", message);
}

/* Past the running limit calls wait and run in arrival order; a full
 * queue refuses, naming the limits; quick functions have their own pool. */
TEST(over_the_bound_calls_wait_in_order_until_the_queue_is_full)
{
	struct test_server s;
	struct engine *e = up(&s, 1);
	CHECK(e != NULL);
	engine_set_max_queued(e, 2);
	invoke(&s, "11111111-bbbb-4111-8111-111111111111", "test::slow", json_null());
	usleep(100 * 1000);
	invoke(&s, "22222222-bbbb-4111-8111-111111111111", "test::echo", json_pack("{s:i}", "n", 2));
	invoke(&s, "33333333-bbbb-4111-8111-111111111111", "test::echo", json_pack("{s:i}", "n", 3));
	invoke(&s, "44444444-bbbb-4111-8111-111111111111", "test::echo", json_null());
	json_t *m = ts_recv(&s, WAIT_MS);
	CHECK(m != NULL);
	CHECK_STR(str(m, "invocation_id"), "44444444-bbbb-4111-8111-111111111111");
	CHECK_STR(str(json_object_get(m, "error"), "code"), "too_many_invocations");
	CHECK_STR(str(json_object_get(m, "error"), "message"),
		  "the worker is at its invocation limit: 1 running and 2 waiting (max_concurrent_invocations 1, "
		  "max_queued_invocations 2)");
	json_decref(m);
	/* The long pool is full; a quick call still answers at once. */
	invoke(&s, "55555555-bbbb-4111-8111-111111111111", "test::quick", json_pack("{s:i}", "n", 5));
	m = ts_recv(&s, WAIT_MS);
	CHECK(m != NULL);
	CHECK_STR(str(m, "invocation_id"), "55555555-bbbb-4111-8111-111111111111");
	CHECK(json_object_get(m, "result") != NULL);
	json_decref(m);
	set_slow(1);
	const char *order[] = { "11111111-bbbb-4111-8111-111111111111", "22222222-bbbb-4111-8111-111111111111",
				"33333333-bbbb-4111-8111-111111111111" };
	for (int i = 0; i < 3; i++) {
		m = ts_recv(&s, WAIT_MS);
		CHECK(m != NULL);
		CHECK_STR(str(m, "invocation_id"), order[i]);
		CHECK(json_object_get(m, "result") != NULL);
		json_decref(m);
	}
	down(&s, e);
}

/* With busy_error set, the refusal carries the caller's error body. */
TEST(a_full_queue_answers_with_the_configured_error)
{
	struct test_server s;
	CHECK_INT(ts_start(&s), 0);
	struct engine_options o = { .url = s.url, .worker_name = "unit", .max_concurrent_invocations = 1,
				    .max_queued_invocations = 1, .busy_error = busy_body };
	sbx_error_t err = NULL;
	struct engine *e = engine_new(&o, &err);
	CHECK(e != NULL);
	struct engine_function f = { .id = "test::slow", .handler = h_slow };
	CHECK_INT(engine_add_function(e, &f, &err), 0);
	CHECK_INT(engine_start(e, &err), 0);
	CHECK_INT(ts_accept(&s, WAIT_MS), 0);
	ts_send_json(&s, json_pack("{s:s, s:s, s:s}", "type", "workerregistered", "worker_id",
				   "11111111-1111-4111-8111-111111111111", "reattach_token", "t"));
	for (int i = 0; i < 2; i++)
		json_decref(ts_recv(&s, WAIT_MS));
	CHECK_INT(engine_wait_connected(e, WAIT_MS, &err), 0);
	for (int i = 1; i <= 3; i++) {
		char id[SBX_UUID_STRLEN + 1];
		snprintf(id, sizeof(id), "%08d-bbbb-4111-8111-111111111111", i);
		invoke(&s, id, "test::slow", json_null());
		usleep(50 * 1000);
	}
	json_t *m = ts_recv(&s, WAIT_MS);
	CHECK(m != NULL);
	CHECK_STR(str(m, "invocation_id"), "00000003-bbbb-4111-8111-111111111111");
	CHECK_STR(str(json_object_get(m, "error"), "code"), "S400-test");
	CHECK(strstr(str(json_object_get(m, "error"), "message"), "max_queued_invocations 1") != NULL);
	json_decref(m);
	down(&s, e);
}

struct call_args {
	struct engine *e;
	int timeout_ms;
	int rc;
	json_t *result, *error;
	sbx_error_t err;
};

static void *call_thread(void *arg)
{
	struct call_args *a = arg;
	json_t *data = json_pack("{s:s}", "q", "v");
	a->rc = engine_call(a->e, NULL, "other::fn", data, a->timeout_ms, &a->result, &a->error, &a->err);
	json_decref(data);
	return NULL;
}

/* Receives the outbound invokefunction of a call and returns its id. */
static int recv_call(struct test_server *s, char id[SBX_UUID_STRLEN + 1], const char *want_tp)
{
	json_t *m = ts_recv(s, WAIT_MS);
	int ok = m != NULL && str(m, "type") != NULL && strcmp(str(m, "type"), "invokefunction") == 0 &&
		 str(m, "function_id") != NULL && strcmp(str(m, "function_id"), "other::fn") == 0 &&
		 str(m, "invocation_id") != NULL && strlen(str(m, "invocation_id")) == SBX_UUID_STRLEN &&
		 sbx_uuid_parse(str(m, "invocation_id"), id) && strcmp(id, str(m, "invocation_id")) == 0 &&
		 json_object_get(m, "data") != NULL &&
		 (want_tp == NULL ? json_object_get(m, "traceparent") == NULL
				  : (str(m, "traceparent") != NULL && strcmp(str(m, "traceparent"), want_tp) == 0));
	json_decref(m);
	return ok ? 0 : -1;
}

static void answer(struct test_server *s, const char *id, json_t *result, json_t *error)
{
	json_t *m = json_pack("{s:s, s:s, s:s}", "type", "invocationresult", "invocation_id", id, "function_id", "other::fn");
	if (result != NULL)
		json_object_set_new(m, "result", result);
	if (error != NULL)
		json_object_set_new(m, "error", error);
	ts_send_json(s, m);
}

TEST(call_result_error_timeout)
{
	struct test_server s;
	struct engine *e = up(&s, 0);
	CHECK(e != NULL);
	char id[SBX_UUID_STRLEN + 1];
	pthread_t t;

	struct call_args a = { .e = e, .timeout_ms = WAIT_MS };
	pthread_create(&t, NULL, call_thread, &a);
	CHECK_INT(recv_call(&s, id, NULL), 0);
	answer(&s, id, json_pack("{s:i}", "answer", 42), NULL);
	pthread_join(t, NULL);
	CHECK_INT(a.rc, 0);
	CHECK_INT(json_integer_value(json_object_get(a.result, "answer")), 42);
	json_decref(a.result);

	struct call_args b = { .e = e, .timeout_ms = WAIT_MS };
	pthread_create(&t, NULL, call_thread, &b);
	CHECK_INT(recv_call(&s, id, NULL), 0);
	answer(&s, id, NULL, json_pack("{s:s, s:s}", "code", "NOT_FOUND", "message", "nope"));
	pthread_join(t, NULL);
	CHECK_INT(b.rc, 1);
	CHECK_STR(str(b.error, "code"), "NOT_FOUND");
	json_decref(b.error);

	struct call_args c = { .e = e, .timeout_ms = 300 };
	pthread_create(&t, NULL, call_thread, &c);
	CHECK_INT(recv_call(&s, id, NULL), 0);
	pthread_join(t, NULL);
	CHECK_INT(c.rc, -1);
	CHECK(c.err != NULL && c.err->errnum == ETIMEDOUT);
	CHECK(strstr(sbx_error_msg(c.err), "TIMEOUT") != NULL);
	sbx_error_free(&c.err);
	/* The late answer is ignored, and the connection still works. */
	answer(&s, id, json_pack("{s:i}", "late", 1), NULL);
	ts_send_text(&s, "{\"type\":\"ping\"}");
	json_t *m = ts_recv(&s, WAIT_MS);
	CHECK(m != NULL);
	CHECK_STR(str(m, "type"), "pong");
	json_decref(m);

	/* A call made inside a handler carries the invocation's trace context. */
	invoke(&s, "33333333-cccc-4111-8111-111111111111", "test::call", json_pack("{s:i}", "n", 1));
	CHECK_INT(recv_call(&s, id, TP), 0);
	answer(&s, id, json_pack("{s:s}", "inner", "ok"), NULL);
	m = ts_recv(&s, WAIT_MS);
	CHECK(m != NULL);
	CHECK_STR(str(m, "invocation_id"), "33333333-cccc-4111-8111-111111111111");
	CHECK_STR(str(json_object_get(m, "result"), "inner"), "ok");
	CHECK_STR(str(m, "traceparent"), TP);
	json_decref(m);
	down(&s, e);
}

/* \u0000 is valid JSON: such an invocation reaches its handler with the
 * NUL byte intact, and one jansson cannot decode (a NUL in an object key)
 * still gets exactly one error answer. */
TEST(nul_bytes_are_answered)
{
	struct test_server s;
	struct engine *e = up(&s, 0);
	CHECK(e != NULL);
	ts_send_text(&s, "{\"type\":\"invokefunction\",\"invocation_id\":\"44444444-1111-4111-8111-111111111111\","
			 "\"function_id\":\"test::echo\",\"data\":{\"argv\":[\"echo\",\"a\\u0000b\"]}}");
	json_t *m = ts_recv(&s, WAIT_MS);
	CHECK(m != NULL);
	CHECK_STR(str(m, "invocation_id"), "44444444-1111-4111-8111-111111111111");
	json_t *arg = json_array_get(json_object_get(json_object_get(json_object_get(m, "result"), "echo"), "argv"), 1);
	CHECK_INT(json_string_length(arg), 3);
	CHECK(memcmp(json_string_value(arg), "a\0b", 3) == 0);
	json_decref(m);

	ts_send_text(&s, "{\"type\":\"invokefunction\",\"invocation_id\":\"55555555-1111-4111-8111-111111111111\","
			 "\"function_id\":\"test::echo\",\"data\":{\"env\":{\"A\\u0000\":\"x\"},\"s\":\"\\\\u0000\"}}");
	m = ts_recv(&s, WAIT_MS);
	CHECK(m != NULL);
	CHECK_STR(str(m, "invocation_id"), "55555555-1111-4111-8111-111111111111");
	CHECK_STR(str(m, "function_id"), "test::echo");
	CHECK_STR(str(json_object_get(m, "error"), "code"), "invocation_failed");
	CHECK(strstr(str(json_object_get(m, "error"), "message"), "NUL byte in an object key") != NULL);
	CHECK(json_object_get(m, "result") == NULL);
	json_decref(m);

	/* A function id is never cut short at a NUL byte into a registered one. */
	ts_send_text(&s, "{\"type\":\"invokefunction\",\"invocation_id\":\"66666666-1111-4111-8111-111111111111\","
			 "\"function_id\":\"test::echo\\u0000x\",\"data\":null}");
	m = ts_recv(&s, WAIT_MS);
	CHECK(m != NULL);
	CHECK_STR(str(m, "invocation_id"), "66666666-1111-4111-8111-111111111111");
	CHECK_INT(json_string_length(json_object_get(m, "function_id")), 12);
	CHECK_STR(str(json_object_get(m, "error"), "code"), "function_not_found");
	json_decref(m);

	/* An invocation id with a NUL byte cannot be answered under its own id. */
	ts_send_text(&s, "{\"type\":\"invokefunction\",\"invocation_id\":\"77777777-1111-4111-8111-111111111111\\u0000\","
			 "\"function_id\":\"test::echo\",\"data\":null}");

	/* A call whose result has a NUL in a key fails at once instead of
	 * waiting for its timeout. */
	struct call_args a = { .e = e, .timeout_ms = WAIT_MS };
	pthread_t t;
	char id[SBX_UUID_STRLEN + 1];
	pthread_create(&t, NULL, call_thread, &a);
	CHECK_INT(recv_call(&s, id, NULL), 0);
	char text[256];
	snprintf(text, sizeof(text), "{\"type\":\"invocationresult\",\"invocation_id\":\"%s\",\"function_id\":\"other::fn\","
		 "\"result\":{\"k\\u0000\":1}}", id);
	ts_send_text(&s, text);
	pthread_join(t, NULL);
	CHECK_INT(a.rc, 1);
	CHECK_STR(str(a.error, "code"), "invalid_result");
	json_decref(a.error);

	ts_send_text(&s, "{\"type\":\"ping\"}");
	m = ts_recv(&s, WAIT_MS);
	CHECK(m != NULL);
	CHECK_STR(str(m, "type"), "pong");
	json_decref(m);
	m = ts_recv(&s, 300);
	CHECK(m == NULL);
	down(&s, e);
}

/* jansson quotes the offending token in its error text; the warning about
 * a malformed frame must not carry it (it may be a secret). */
TEST(malformed_frame_warning_hides_the_text)
{
	struct test_server s;
	struct engine *e = up(&s, 0);
	CHECK(e != NULL);
	FILE *log = tmpfile();
	CHECK(log != NULL);
	int saved = dup(STDERR_FILENO);
	CHECK(saved >= 0);
	fflush(stderr);
	dup2(fileno(log), STDERR_FILENO);
	sbx_log_set_level(SBX_LOG_WARN);
	ts_send_text(&s, "{\"type\":\"invokefunction\",\"auth\":\"SECRETTOKEN\xff\"}");
	ts_send_text(&s, "{\"type\":\"ping\"}");
	json_t *m = ts_recv(&s, WAIT_MS);
	sbx_log_set_level(SBX_LOG_ERROR);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	CHECK(m != NULL);
	json_decref(m);
	char text[4096] = "";
	rewind(log);
	size_t got = fread(text, 1, sizeof(text) - 1, log);
	text[got] = '\0';
	fclose(log);
	CHECK(strstr(text, "malformed JSON dropped") != NULL);
	CHECK(strstr(text, "SECRET") == NULL);
	down(&s, e);
}

TEST(reconnects_reattaches_and_reregisters)
{
	struct test_server s;
	struct engine *e = up(&s, 0);
	CHECK(e != NULL);
	char id[SBX_UUID_STRLEN + 1];
	pthread_t t;
	struct call_args a = { .e = e, .timeout_ms = 20000 };
	pthread_create(&t, NULL, call_thread, &a);
	CHECK_INT(recv_call(&s, id, NULL), 0);

	ts_drop(&s);
	/* The pending call fails at once rather than at its deadline. */
	pthread_join(t, NULL);
	CHECK_INT(a.rc, -1);
	CHECK(a.err != NULL && a.err->errnum == ECONNRESET);
	sbx_error_free(&a.err);

	CHECK_INT(ts_accept(&s, WAIT_MS), 0);
	ts_send_json(&s, json_pack("{s:s, s:s, s:s}", "type", "workerregistered", "worker_id", "w2", "reattach_token", "t2"));
	json_t *m = ts_recv(&s, WAIT_MS);
	CHECK(m != NULL);
	CHECK_STR(str(m, "type"), "reattach");
	CHECK_STR(str(m, "previous_worker_id"), "11111111-1111-4111-8111-111111111111");
	CHECK_STR(str(m, "reattach_token"), "tok-11111111-1111-4111-8111-111111111111");
	json_decref(m);
	m = ts_recv(&s, WAIT_MS);
	CHECK(m != NULL);
	CHECK_STR(str(m, "function_id"), "engine::workers::register");
	json_decref(m);
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		m = ts_recv(&s, WAIT_MS);
		CHECK(m != NULL);
		CHECK_STR(str(m, "type"), "registerfunction");
		CHECK_STR(str(m, "id"), fns[i].id);
		json_decref(m);
	}
	sbx_error_t err = NULL;
	CHECK_INT(engine_wait_connected(e, WAIT_MS, &err), 0);
	invoke(&s, "44444444-dddd-4111-8111-111111111111", "test::echo", json_null());
	m = ts_recv(&s, WAIT_MS);
	CHECK(m != NULL);
	CHECK_STR(str(m, "invocation_id"), "44444444-dddd-4111-8111-111111111111");
	json_decref(m);

	/* The next reconnect reattaches with the id of the second session. */
	ts_drop(&s);
	CHECK_INT(ts_accept(&s, WAIT_MS), 0);
	m = ts_recv(&s, WAIT_MS);
	CHECK(m != NULL);
	CHECK_STR(str(m, "type"), "reattach");
	CHECK_STR(str(m, "previous_worker_id"), "w2");
	CHECK_STR(str(m, "reattach_token"), "t2");
	json_decref(m);
	down(&s, e);
}

TEST(every_upgrade_carries_the_headers)
{
	static const char hdrs[] = "Authorization: Bearer t0k\r\nX-Tenant: blue\r\n";
	upgrade_headers = hdrs;
	struct test_server s;
	struct engine *e = up(&s, 0);
	upgrade_headers = NULL;
	CHECK(e != NULL);
	CHECK(strstr(s.request, "\r\nSec-WebSocket-Version: 13\r\n" "Authorization: Bearer t0k\r\nX-Tenant: blue\r\n\r\n") !=
	      NULL);
	/* The reconnect sends them again. */
	ts_drop(&s);
	CHECK_INT(ts_accept(&s, WAIT_MS), 0);
	CHECK(strstr(s.request, "\r\n" "Authorization: Bearer t0k\r\nX-Tenant: blue\r\n\r\n") != NULL);
	down(&s, e);
}

TEST(function_conflict_is_not_fatal)
{
	struct test_server s;
	struct engine *e = up(&s, 0);
	CHECK(e != NULL);
	ts_send_text(&s, "{\"type\":\"registrationrejected\",\"code\":\"FUNCTION_NAMESPACE_CONFLICT\","
			 "\"namespace\":\"default\",\"function_id\":\"test::echo\",\"owner_worker_id\":\"x\"}");
	ts_send_text(&s, "{\"type\":\"ping\"}");
	json_t *m = ts_recv(&s, WAIT_MS);
	CHECK(m != NULL);
	CHECK_STR(str(m, "type"), "pong");
	json_decref(m);
	CHECK(!engine_fatally_rejected(e));
	down(&s, e);
}

TEST(worker_conflict_stops_for_good)
{
	struct test_server s;
	struct engine *e = up(&s, 0);
	CHECK(e != NULL);
	ts_send_text(&s, "{\"type\":\"registrationrejected\",\"code\":\"WORKER_NAMESPACE_CONFLICT\","
			 "\"namespace\":\"default\",\"worker_name\":\"unit\",\"owner_worker_id\":\"x\"}");
	engine_wait_stopped(e);
	CHECK(engine_fatally_rejected(e));
	ts_drop(&s);
	/* No reconnect attempt follows. */
	CHECK_INT(ts_accept(&s, 2500), -1);
	json_t *res = NULL, *ebody = NULL;
	sbx_error_t err = NULL;
	CHECK_INT(engine_call(e, NULL, "other::fn", NULL, 1000, &res, &ebody, &err), -1);
	sbx_error_free(&err);
	engine_free(e);
	ts_stop(&s);
}

/* A front's call names the member's namespace; a plain call names none. */
TEST(a_call_in_a_namespace_says_so)
{
	struct test_server s;
	struct engine *e = up(&s, 0);
	CHECK(e != NULL);
	json_t *res = NULL, *ebody = NULL;
	sbx_error_t err = NULL;
	struct call_args plain = { .e = e, .timeout_ms = 300 };
	pthread_t t;
	pthread_create(&t, NULL, call_thread, &plain);
	json_t *m = ts_recv(&s, WAIT_MS);
	CHECK(m != NULL && json_object_get(m, "namespace") == NULL);
	json_decref(m);
	pthread_join(t, NULL);
	sbx_error_free(&plain.err);
	CHECK_INT(engine_call_in(e, NULL, "m1", "other::fn", NULL, 300, &res, &ebody, &err), -1);
	sbx_error_free(&err);
	m = ts_recv(&s, WAIT_MS);
	CHECK(m != NULL);
	CHECK_STR(str(m, "namespace"), "m1");
	CHECK_STR(str(m, "function_id"), "other::fn");
	json_decref(m);
	down(&s, e);
}

/* A standby (a second front) refused the lease keeps trying, about once a
 * second, and registers again in full when a connection is let in. */
TEST(a_standby_waits_for_the_lease)
{
	struct test_server s;
	wait_for_lease = true;
	struct engine *e = up(&s, 0);
	wait_for_lease = false;
	CHECK(e != NULL);
	ts_send_text(&s, "{\"type\":\"registrationrejected\",\"code\":\"WORKER_NAMESPACE_CONFLICT\","
			 "\"namespace\":\"default\",\"worker_name\":\"unit\",\"owner_worker_id\":\"x\"}");
	ts_drop(&s);
	CHECK_INT(ts_accept(&s, 2500), 0);
	CHECK(!engine_fatally_rejected(e));
	json_t *m = ts_recv(&s, WAIT_MS);
	CHECK(m != NULL);
	CHECK_STR(str(m, "type"), "reattach");
	json_decref(m);
	m = ts_recv(&s, WAIT_MS);
	CHECK(m != NULL);
	CHECK_STR(str(m, "function_id"), "engine::workers::register");
	json_decref(m);
	down(&s, e);
}

static long long mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

struct stop_args {
	struct engine *e;
};

static void *stopper(void *arg)
{
	usleep(200 * 1000);
	engine_stop(((struct stop_args *)arg)->e);
	return NULL;
}

TEST(stop_is_prompt_during_backoff_and_connect)
{
	/* A listener that never accepts: the connect completes in the kernel
	 * backlog, then the upgrade waits. */
	struct test_server s;
	CHECK_INT(ts_start(&s), 0);
	struct engine *e = new_engine(&s, 0);
	CHECK(e != NULL);
	sbx_error_t err = NULL;
	CHECK_INT(engine_start(e, &err), 0);
	struct stop_args a = { e };
	pthread_t t;
	long long t0 = mono_ms();
	pthread_create(&t, NULL, stopper, &a);
	engine_wait_stopped(e);
	engine_free(e);
	pthread_join(t, NULL);
	CHECK(mono_ms() - t0 < 2000);
	ts_stop(&s);

	/* Nothing listening: the client sits in its backoff sleep. */
	struct test_server dead;
	CHECK_INT(ts_start(&dead), 0);
	ts_stop(&dead);
	e = new_engine(&dead, 0);
	CHECK(e != NULL);
	CHECK_INT(engine_start(e, &err), 0);
	CHECK_INT(engine_wait_connected(e, 300, &err), -1);
	sbx_error_free(&err);
	a.e = e;
	t0 = mono_ms();
	pthread_create(&t, NULL, stopper, &a);
	engine_wait_stopped(e);
	engine_free(e);
	pthread_join(t, NULL);
	CHECK(mono_ms() - t0 < 2000);
}

TEST(default_url_from_environment)
{
	unsetenv("III_URL");
	unsetenv("III_ENGINE_URL");
	CHECK_STR(engine_default_url(), "ws://127.0.0.1:49134");
	setenv("III_ENGINE_URL", "ws://legacy:1", 1);
	CHECK_STR(engine_default_url(), "ws://legacy:1");
	setenv("III_URL", "ws://primary:2", 1);
	CHECK_STR(engine_default_url(), "ws://primary:2");
	unsetenv("III_URL");
	unsetenv("III_ENGINE_URL");
	struct engine_options o = { .url = "http://bad" };
	sbx_error_t err = NULL;
	CHECK(engine_new(&o, &err) == NULL);
	sbx_error_free(&err);
}

__attribute__((constructor)) static void quiet(void)
{
	sbx_log_set_level(SBX_LOG_ERROR);
}
