/* exec's and run's `stream` field over a fake backend and a fake channel
 * port: what goes to the channels and when they close, what the reply and
 * the S200 envelope keep, the S001/S300 rejections, a failed send. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/adapter.h"
#include "adapter/adapter_state.h"
#include "common/scodes.h"
#include "harness.h"
#include "adapter_call.h"

/* ---- the fake channel port: writers named by their channel_id ---- */

struct fake_writer {
	char id[32];
	char data[256];
	size_t len;
	int sends;
	bool closed;
	char fail_text[128]; /* the error frame's text; "" for a normal Close */
};

static struct fake_writer writers[4];
static int n_writers;
static int fail_sends_from = -1; /* a send fails from this (0-based) send of a writer on */

static void *w_open(void *ctx, json_t *ref, sbx_error_t *err)
{
	(void)ctx;
	const char *id = json_string_value(json_object_get(ref, "channel_id"));
	const char *dir = json_string_value(json_object_get(ref, "direction"));
	if (id == NULL || dir == NULL)
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "channel ref: not a ref"), NULL;
	if (strcmp(dir, "write") != 0)
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "channel ref: `direction` must be \"write\""), NULL;
	if (strcmp(id, "refused") == 0)
		return sbx_error_scode(err, SBX_S_FS_CHANNEL, "opening the write end of channel refused: 404"), NULL;
	struct fake_writer *w = &writers[n_writers++];
	memset(w, 0, sizeof(*w));
	snprintf(w->id, sizeof(w->id), "%s", id);
	return w;
}

static int w_send(void *wp, const void *data, size_t len, sbx_error_t *err)
{
	struct fake_writer *w = wp;
	if (fail_sends_from >= 0 && w->sends >= fail_sends_from)
		return sbx_error_scode(err, SBX_S_FS_CHANNEL, "write to channel failed: reader gone");
	w->sends++;
	memcpy(w->data + w->len, data, len);
	w->len += len;
	return 0;
}

static void w_close(void *wp, const char *fail_text)
{
	struct fake_writer *w = wp;
	w->closed = true;
	snprintf(w->fail_text, sizeof(w->fail_text), "%s", fail_text != NULL ? fail_text : "");
}

static const struct sbx_stream_ops fake_streams = { .writer_open = w_open, .writer_send = w_send,
						    .writer_close = w_close };

static struct fake_writer *writer(const char *id)
{
	for (int i = 0; i < n_writers; i++) {
		if (strcmp(writers[i].id, id) == 0)
			return &writers[i];
	}
	return NULL;
}

/* ---- the fake backend: an exec prints o1, e1, o2 piece by piece ---- */

static int execs;
static bool time_out;

static void *fake_boot(void *ctx, const struct sbx_boot_request *req, sbx_error_t *err)
{
	(void)ctx, (void)req, (void)err;
	return calloc(1, 1);
}

static bool fake_alive(void *vm)
{
	(void)vm;
	return true;
}

static int piece(const struct sbx_exec_request *req, struct sbx_exec_result *res, int fd, const char *s,
		 sbx_error_t *err)
{
	if (req->on_output != NULL && req->on_output(req->output_ud, fd, s, strlen(s)) == 1)
		return 0;
	return exec_output_append(fd == 2 ? &res->err : &res->out, s, strlen(s), err);
}

static int fake_exec(void *vm, const struct sbx_exec_request *req, struct sbx_exec_result *res, sbx_error_t *err)
{
	(void)vm;
	execs++;
	if (piece(req, res, 1, "o1\n", err) < 0 || piece(req, res, 2, "e1\n", err) < 0 ||
	    piece(req, res, 1, "o2\n", err) < 0)
		return -1;
	if (time_out)
		return sbx_error_scode(err, SBX_S_EXEC_TIMEOUT, "exec timed out after %llu ms",
				       (unsigned long long)req->timeout_ms);
	res->exit_code = 3;
	res->duration_ms = 5;
	return 0;
}

static int fake_write(void *vm, const char *path, uint32_t mode, bool parents, const void *data, size_t len,
		      sbx_error_t *err)
{
	(void)vm, (void)path, (void)mode, (void)parents, (void)data, (void)len, (void)err;
	return 0;
}

static void fake_stop(void *vm)
{
	free(vm);
}

static const struct sbx_backend_ops fake_ops = { .boot = fake_boot, .exec = fake_exec, .write_file = fake_write,
						  .stop = fake_stop, .alive = fake_alive };

static struct sbx_adapter *make(bool with_streams)
{
	n_writers = 0;
	execs = 0;
	time_out = false;
	fail_sends_from = -1;
	json_t *v = json_loads("{\"image_allowlist\":[\"python\"]}", 0, NULL);
	sbx_error_t err = NULL;
	struct sbx_config *cfg = sbx_config_parse(v, &err);
	json_decref(v);
	struct sbx_adapter *a = cfg != NULL ? sbx_adapter_new(cfg, &err) : NULL;
	if (a != NULL && sbx_adapter_use_backend(a, &fake_ops, NULL, &err) < 0) {
		sbx_adapter_free(a);
		a = NULL;
	}
	sbx_error_free(&err);
	if (a != NULL && with_streams)
		a->streams = (struct sbx_stream_host){ &fake_streams, NULL };
	return a;
}

#define REF(id, dir) "{\"channel_id\":\"" id "\",\"access_key\":\"k\",\"direction\":\"" dir "\"}"

/* Creates a sandbox and execs {"sandbox_id": id, "cmd": "x", <fields>}. */
static json_t *exec_with(struct sbx_adapter *a, const char *fields)
{
	json_t *r = adapter_call_json(a, "create", "{\"image\":\"python\"}");
	char req[1024];
	snprintf(req, sizeof(req), "{\"sandbox_id\":\"%s\",\"cmd\":\"x\"%s%s}", jstr(r, "sandbox_id"),
		 fields[0] != '\0' ? "," : "", fields);
	json_decref(r);
	return adapter_call_json(a, "exec", req);
}

TEST(streamed_stdout_goes_to_its_channel_piece_by_piece)
{
	struct sbx_adapter *a = make(true);
	CHECK(a != NULL);
	json_t *r = exec_with(a, "\"stream\":{\"stdout\":" REF("out", "write") "}");
	CHECK_STR(jstr(r, "stdout"), "");
	CHECK_STR(jstr(r, "stderr"), "e1\n");
	CHECK(json_is_false(json_object_get(r, "stdout_truncated")));
	CHECK_INT(json_integer_value(json_object_get(r, "exit_code")), 3);
	CHECK_INT(json_integer_value(json_object_get(r, "duration_ms")), 5);
	CHECK(json_is_false(json_object_get(r, "timed_out")));
	json_decref(r);
	struct fake_writer *w = writer("out");
	CHECK(w != NULL);
	CHECK_INT(n_writers, 1);
	CHECK_INT(w->sends, 2);
	CHECK_INT(w->len, 6);
	CHECK(memcmp(w->data, "o1\no2\n", 6) == 0);
	CHECK(w->closed);
	CHECK_STR(w->fail_text, "");
	sbx_adapter_free(a);
}

TEST(both_streams_streamed_and_a_timeout_ends_them_with_the_error_frame)
{
	struct sbx_adapter *a = make(true);
	CHECK(a != NULL);
	time_out = true;
	json_t *r = exec_with(a, "\"timeout_ms\":1500,\"stream\":{\"stdout\":" REF("out", "write") ",\"stderr\":"
			  REF("err", "write") "}");
	CHECK_STR(jstr(r, "code"), "S200");
	CHECK_STR(jstr(r, "stdout"), "");
	CHECK_STR(jstr(r, "stderr"), "");
	CHECK(json_is_false(json_object_get(r, "stdout_truncated")));
	json_decref(r);
	struct fake_writer *o = writer("out"), *e = writer("err");
	CHECK(o != NULL && e != NULL);
	CHECK_INT(o->len, 6);
	CHECK_INT(e->len, 3);
	CHECK(memcmp(e->data, "e1\n", 3) == 0);
	CHECK(o->closed && e->closed);
	CHECK_STR(o->fail_text, "exec timed out after 1500 ms");
	CHECK_STR(e->fail_text, "exec timed out after 1500 ms");
	sbx_adapter_free(a);
}

TEST(a_reader_ref_is_s001_naming_the_field_and_nothing_runs)
{
	struct sbx_adapter *a = make(true);
	CHECK(a != NULL);
	json_t *r = exec_with(a, "\"stream\":{\"stdout\":" REF("out", "write") ",\"stderr\":" REF("err", "read") "}");
	CHECK_STR(jstr(r, "code"), "S001");
	CHECK_STR(jstr(r, "message"), "invalid request: `stream.stderr`: channel ref: `direction` must be \"write\"");
	json_decref(r);
	CHECK_INT(execs, 0);
	/* The writer opened before the bad one is closed, with the error frame. */
	struct fake_writer *o = writer("out");
	CHECK(o != NULL && o->closed);
	CHECK(o->fail_text[0] != '\0');
	CHECK_INT(o->len, 0);
	sbx_adapter_free(a);
}

TEST(a_refused_channel_is_s218_and_a_malformed_stream_is_rejected)
{
	struct sbx_adapter *a = make(true);
	CHECK(a != NULL);
	json_t *r = exec_with(a, "\"stream\":{\"stdout\":" REF("refused", "write") "}");
	CHECK_STR(jstr(r, "code"), "S218");
	CHECK_STR(jstr(r, "message"), "fs channel aborted: stream.stdout: opening the write end of channel refused: 404");
	json_decref(r);
	r = exec_with(a, "\"stream\":\"stdout\"");
	CHECK(strstr(jstr(r, "decode") != NULL ? jstr(r, "decode") : jstr(r, "message"), "stream") != NULL);
	json_decref(r);
	r = exec_with(a, "\"stream\":{\"stdout\":7}");
	CHECK(strstr(jstr(r, "decode") != NULL ? jstr(r, "decode") : jstr(r, "message"), "stream.stdout") != NULL);
	json_decref(r);
	CHECK_INT(execs, 0);
	sbx_adapter_free(a);
}

TEST(without_a_channel_port_a_stream_is_s300)
{
	struct sbx_adapter *a = make(false);
	CHECK(a != NULL);
	json_t *r = exec_with(a, "\"stream\":{\"stdout\":" REF("out", "write") "}");
	CHECK_STR(jstr(r, "code"), "S300");
	json_decref(r);
	CHECK_INT(execs, 0);
	/* Without `stream` (or with null) the port is not needed. */
	r = exec_with(a, "\"stream\":null");
	CHECK_STR(jstr(r, "stdout"), "o1\no2\n");
	json_decref(r);
	sbx_adapter_free(a);
}

TEST(a_failed_send_drops_the_rest_of_that_stream_only)
{
	struct sbx_adapter *a = make(true);
	CHECK(a != NULL);
	fail_sends_from = 1;
	json_t *r = exec_with(a, "\"stream\":{\"stdout\":" REF("out", "write") "}");
	CHECK_INT(json_integer_value(json_object_get(r, "exit_code")), 3);
	CHECK_STR(jstr(r, "stdout"), "");
	CHECK_STR(jstr(r, "stderr"), "e1\n");
	json_decref(r);
	struct fake_writer *o = writer("out");
	CHECK(o != NULL && o->closed);
	CHECK_INT(o->sends, 1);
	CHECK_INT(o->len, 3);
	sbx_adapter_free(a);
}

TEST(no_stream_keeps_the_reply)
{
	struct sbx_adapter *a = make(true);
	CHECK(a != NULL);
	json_t *r = exec_with(a, "");
	CHECK_STR(jstr(r, "stdout"), "o1\no2\n");
	CHECK_STR(jstr(r, "stderr"), "e1\n");
	CHECK_INT(json_object_size(r), 8);
	json_decref(r);
	CHECK_INT(n_writers, 0);
	sbx_adapter_free(a);
}

TEST(run_streams_its_exec)
{
	struct sbx_adapter *a = make(true);
	CHECK(a != NULL);
	json_t *r = adapter_call_json(a, "run", "{\"image\":\"python\",\"lang\":\"python\",\"code\":\"print(1)\",\"stream\":{\"stderr\":"
			 REF("err", "write") "}}");
	CHECK_STR(jstr(r, "stdout"), "o1\no2\n");
	CHECK_STR(jstr(r, "stderr"), "");
	json_decref(r);
	struct fake_writer *e = writer("err");
	CHECK(e != NULL && e->closed);
	CHECK_INT(e->len, 3);
	CHECK_STR(e->fail_text, "");
	/* A bad ref fails run's exec step. */
	r = adapter_call_json(a, "run", "{\"image\":\"python\",\"lang\":\"python\",\"code\":\"1\",\"stream\":{\"stdout\":"
		 REF("x", "read") "}}");
	CHECK_STR(jstr(r, "code"), "S001");
	CHECK(strstr(jstr(r, "message"), "`stream.stdout`") != NULL);
	json_decref(r);
	sbx_adapter_free(a);
}
