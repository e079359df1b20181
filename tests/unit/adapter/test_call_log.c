/* The call log: a debug start and end line per call, an info line with the
 * S-code and cause for a refusal or failure, ids from the request or the
 * reply, never its auth or env. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapter/adapter.h"
#include "adapter/call_log.h"
#include "adapter/scode.h"
#include "common/log.h"
#include "common/scodes.h"
#include "harness.h"

/* What the call wrote to stderr, one JSON object a line (at most 8). */
struct captured {
	json_t *line[8];
	size_t n;
	char *raw;
};

static void captured_free(struct captured *c)
{
	for (size_t i = 0; i < c->n; i++)
		json_decref(c->line[i]);
	free(c->raw);
}

static int capture_begin(FILE **f, int *saved, enum sbx_log_level level)
{
	sbx_log_set_format(SBX_LOG_JSON);
	sbx_log_set_level(level);
	*f = tmpfile();
	*saved = dup(2);
	return *f == NULL || *saved < 0 || dup2(fileno(*f), 2) < 0 ? -1 : 0;
}

static void capture_end(FILE *f, int saved, struct captured *c)
{
	dup2(saved, 2);
	close(saved);
	sbx_log_set_format(SBX_LOG_TEXT);
	sbx_log_set_level(SBX_LOG_INFO);
	*c = (struct captured){ 0 };
	long n = ftell(f);
	c->raw = n >= 0 ? calloc(1, (size_t)n + 1) : NULL;
	if (c->raw != NULL) {
		rewind(f);
		if (fread(c->raw, 1, (size_t)n, f) != (size_t)n)
			c->raw[0] = '\0';
	}
	fclose(f);
	for (char *p = c->raw; p != NULL && *p != '\0' && c->n < 8;) {
		char *nl = strchr(p, '\n');
		if (nl == NULL)
			break;
		c->line[c->n++] = json_loadb(p, (size_t)(nl - p), 0, NULL);
		p = nl + 1;
	}
}

/* Logs one call of fn with request req ending in rc/out. */
static int log_call(enum sbx_log_level level, const char *fn, json_t *req, int rc, json_t *out, struct captured *c)
{
	FILE *f;
	int saved;
	if (capture_begin(&f, &saved, level) < 0)
		return -1;
	struct sbx_call_log log;
	sbx_call_log_start(&log, fn, req);
	sbx_call_log_end(&log, rc, out);
	capture_end(f, saved, c);
	return 0;
}

static const char *str(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

TEST(ok_call_has_debug_start_and_end_with_id_and_duration)
{
	json_t *req = json_pack("{s:s, s:s, s:{s:s}}", "sandbox_id", "7d0e", "auth", "SECRET-TOKEN", "env", "K",
				"SECRET-ENV");
	json_t *out = json_pack("{s:s}", "stdout", "SECRET-OUT");
	struct captured c;
	CHECK(log_call(SBX_LOG_DEBUG, "exec", req, 0, out, &c) == 0);
	CHECK_INT(c.n, 2);
	CHECK(c.line[0] != NULL && c.line[1] != NULL);
	CHECK_STR(str(c.line[0], "msg"), "call started");
	CHECK_STR(str(c.line[0], "level"), "debug");
	CHECK_STR(str(c.line[0], "fn"), "exec");
	CHECK_STR(str(c.line[0], "sandbox_id"), "7d0e");
	CHECK_STR(str(c.line[1], "msg"), "call ended");
	CHECK_STR(str(c.line[1], "level"), "debug");
	CHECK_STR(str(c.line[1], "outcome"), "ok");
	CHECK_STR(str(c.line[1], "sandbox_id"), "7d0e");
	CHECK(json_is_integer(json_object_get(c.line[1], "duration_ms")));
	CHECK(strstr(c.raw, "SECRET") == NULL);
	captured_free(&c);
	json_decref(req);
	json_decref(out);
}

TEST(failure_is_info_with_scode_and_cause)
{
	json_t *req = json_pack("{s:s}", "sandbox_id", "7d0e");
	sbx_error_t err = NULL;
	sbx_error_scode(&err, SBX_S_NOT_FOUND, "7d0e");
	json_t *out = sbx_error_body_from_error(err, NULL, "", NULL);
	sbx_error_free(&err);
	struct captured c;
	CHECK(log_call(SBX_LOG_INFO, "exec", req, -1, out, &c) == 0);
	CHECK_INT(c.n, 1);
	CHECK(c.line[0] != NULL);
	CHECK_STR(str(c.line[0], "level"), "info");
	CHECK_STR(str(c.line[0], "scode"), "S002");
	CHECK_STR(str(c.line[0], "outcome"), "S002");
	CHECK_STR(str(c.line[0], "cause"), "sandbox not found: 7d0e");
	CHECK_STR(str(c.line[0], "sandbox_id"), "7d0e");
	captured_free(&c);
	json_decref(out);
	json_decref(req);
}

TEST(decode_error_is_logged_as_decode)
{
	json_t *out = sbx_error_body_decode("missing field `path`");
	struct captured c;
	CHECK(log_call(SBX_LOG_INFO, "fs::ls", NULL, -1, out, &c) == 0);
	CHECK_INT(c.n, 1);
	CHECK(c.line[0] != NULL);
	CHECK_STR(str(c.line[0], "scode"), "decode");
	CHECK_STR(str(c.line[0], "cause"), "missing field `path`");
	CHECK(json_object_get(c.line[0], "sandbox_id") == NULL);
	captured_free(&c);
	json_decref(out);
}

TEST(create_names_its_sandbox_from_the_reply_and_ok_is_silent_at_info)
{
	json_t *req = json_pack("{s:s}", "image", "python");
	json_t *out = json_pack("{s:s, s:s}", "sandbox_id", "id-9", "image", "python");
	struct captured c;
	CHECK(log_call(SBX_LOG_DEBUG, "create", req, 0, out, &c) == 0);
	CHECK_INT(c.n, 2);
	CHECK(c.line[0] != NULL && c.line[1] != NULL);
	CHECK(json_object_get(c.line[0], "sandbox_id") == NULL);
	CHECK_STR(str(c.line[1], "sandbox_id"), "id-9");
	captured_free(&c);
	CHECK(log_call(SBX_LOG_INFO, "create", req, 0, out, &c) == 0);
	CHECK_INT(c.n, 0);
	captured_free(&c);
	json_decref(req);
	json_decref(out);
}

TEST(worker_calls_log_the_worker_never_auth_and_long_ids_are_cut)
{
	char long_id[400];
	memset(long_id, 'w', sizeof(long_id) - 1);
	long_id[sizeof(long_id) - 1] = '\0';
	json_t *req = json_pack("{s:s, s:s}", "worker", long_id, "auth", "SECRET-TOKEN");
	json_t *out = json_pack("{s:s, s:s}", "code", "invocation_failed", "message", "handler error: {not json");
	struct captured c;
	CHECK(log_call(SBX_LOG_INFO, "worker::status", req, -1, out, &c) == 0);
	CHECK_INT(c.n, 1);
	CHECK(c.line[0] != NULL);
	const char *w = str(c.line[0], "worker");
	CHECK(w != NULL && strlen(w) == SBX_CALL_LOG_ID_MAX + 3 && strcmp(w + SBX_CALL_LOG_ID_MAX, "...") == 0);
	/* an envelope that does not parse: the body's own code and message */
	CHECK_STR(str(c.line[0], "scode"), "invocation_failed");
	CHECK_STR(str(c.line[0], "cause"), "handler error: {not json");
	CHECK(strstr(c.raw, "SECRET") == NULL);
	captured_free(&c);
	json_decref(req);
	json_decref(out);
}

TEST(unknown_function_through_the_front_door)
{
	FILE *f;
	int saved;
	CHECK(capture_begin(&f, &saved, SBX_LOG_DEBUG) == 0);
	json_t *out = NULL;
	int rc = sbx_adapter_call(NULL, "no::such", NULL, &out);
	struct captured c;
	capture_end(f, saved, &c);
	CHECK_INT(rc, -1);
	CHECK_INT(c.n, 2);
	CHECK(c.line[1] != NULL);
	CHECK_STR(str(c.line[1], "fn"), "no::such");
	CHECK_STR(str(c.line[1], "scode"), "function_not_found");
	CHECK_STR(str(c.line[1], "level"), "info");
	captured_free(&c);
	json_decref(out);
}
