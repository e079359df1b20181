#include <stdlib.h>
#include <string.h>

#include "adapter/scode.h"
#include "harness.h"

static char *dump(json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return s;
}

#define DOCS "https://github.com/iii-hq/iii/blob/main/crates/iii-worker/src/sandbox_daemon/README.md#"

TEST(envelope_s001_exact)
{
	char *s = dump(sbx_envelope_new("S001", "sandbox_id is not a valid UUID: x"));
	CHECK_STR(s, "{\"type\":\"validation\",\"code\":\"S001\",\"message\":\"invalid request: sandbox_id is not a "
		     "valid UUID: x\",\"docs_url\":\"" DOCS "S001\",\"retryable\":false,\"fix\":null,\"fix_note\":\"see "
		     "message: examples are inline\"}");
	free(s);
}

TEST(envelope_s100_config_not_retryable)
{
	json_t *e = sbx_envelope_new("S100", "image 'node' not in catalog");
	CHECK_STR(json_string_value(json_object_get(e, "type")), "config");
	CHECK(json_is_false(json_object_get(e, "retryable")));
	CHECK(json_is_null(json_object_get(e, "fix")));
	CHECK_STR(json_string_value(json_object_get(e, "message")), "image 'node' not in catalog");
	CHECK_STR(json_string_value(json_object_get(e, "fix_note")),
		  "set `image` to a value listed in the message or add a custom_images entry in iii.config.yaml");
	json_decref(e);
}

TEST(envelope_s211_parent_has_fix)
{
	char *s = dump(sbx_envelope_new("S211", "parent not found: /workspace"));
	CHECK_STR(s, "{\"type\":\"filesystem\",\"code\":\"S211\",\"message\":\"parent directory not found: parent not "
		     "found: /workspace\",\"docs_url\":\"" DOCS "S211\",\"retryable\":false,\"fix\":{\"parents\":true},"
		     "\"fix_note\":\"merge `fix` into the original request and resubmit: `parents: true` auto-creates "
		     "missing intermediate directories\"}");
	free(s);
}

TEST(envelope_s211_plain_has_no_fix)
{
	json_t *e = sbx_envelope_new("S211", "path not found: /x/y");
	CHECK_STR(json_string_value(json_object_get(e, "message")), "file not found: path not found: /x/y");
	CHECK(json_is_null(json_object_get(e, "fix")));
	CHECK(json_is_null(json_object_get(e, "fix_note")));
	json_decref(e);
}

TEST(envelope_retryable_codes)
{
	const char *codes[] = { "S001", "S002", "S003", "S004", "S100", "S101", "S102", "S200", "S210", "S211",
				"S212", "S213", "S214", "S215", "S216", "S217", "S218", "S219", "S300", "S400",
				"S501", "S502", "S503", "S504", "S505", "S506" };
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		const struct sbx_scode *sc = sbx_scode_find(codes[i]);
		CHECK(sc != NULL);
		CHECK_INT(sc->retryable, strcmp(codes[i], "S102") == 0 || strcmp(codes[i], "S218") == 0);
	}
	CHECK_STR(sbx_scode_find("S218")->type, "transient");
	CHECK_STR(sbx_scode_find("S003")->type, "validation");
	CHECK_STR(sbx_scode_find("S101")->type, "internal");
	CHECK_STR(sbx_scode_find("S200")->type, "execution");
	CHECK_STR(sbx_scode_find("S300")->type, "platform");
	CHECK_STR(sbx_scode_find("S400")->type, "config");
	CHECK_STR(sbx_scode_find("S505")->type, "validation");
	CHECK_STR(sbx_scode_find("S503")->type, "validation");
	CHECK_STR(sbx_scode_find("S504")->type, "config");
	CHECK_STR(sbx_scode_find("S506")->type, "platform");
	CHECK(sbx_scode_find("S999") == NULL);
}

TEST(envelope_s506_has_boot_prefix)
{
	json_t *e = sbx_envelope_new("S506", "guest panicked");
	CHECK_STR(json_string_value(json_object_get(e, "message")), "worker VM failed to boot: guest panicked");
	CHECK_STR(json_string_value(json_object_get(e, "fix_note")), "platform-level failure; not auto-recoverable");
	json_decref(e);
}

TEST(envelope_unknown_code_is_s300)
{
	json_t *e = sbx_envelope_new("S999", "boom");
	CHECK_STR(json_string_value(json_object_get(e, "code")), "S300");
	CHECK_STR(json_string_value(json_object_get(e, "message")), "VM boot failed: boom");
	json_decref(e);
}

TEST(run_wrapping_exact)
{
	json_t *e = sbx_envelope_new("S100", "image 'x' not in catalog");
	sbx_error_t err = NULL;
	CHECK_INT(sbx_envelope_wrap_run(e, "create", "", &err), 0);
	char *s = dump(e);
	CHECK_STR(s, "{\"type\":\"config\",\"code\":\"S100\",\"message\":\"during sandbox::run step `create`: "
		     "image 'x' not in catalog\",\"docs_url\":\"" DOCS "S100\",\"retryable\":false,"
		     "\"fix\":{\"context\":\"during sandbox::run step `create`\",\"sandbox_id\":\"\",\"inner_code\":"
		     "\"S100\"},\"fix_note\":null}");
	free(s);
}

TEST(run_wrapping_keeps_inner_retryable)
{
	json_t *e = sbx_envelope_new("S218", "stalled");
	sbx_error_t err = NULL;
	CHECK_INT(sbx_envelope_wrap_run(e, "fs::write (code)", "0f8fad5b-d9cb-469f-a165-70867728950e", &err), 0);
	CHECK(json_is_true(json_object_get(e, "retryable")));
	CHECK_STR(json_string_value(json_object_get(e, "message")),
		  "during sandbox::run step `fs::write (code)` (sandbox_id=0f8fad5b-d9cb-469f-a165-70867728950e): fs "
		  "channel aborted: stalled");
	CHECK_STR(json_string_value(json_object_get(json_object_get(e, "fix"), "inner_code")), "S218");
	json_decref(e);
}

TEST(error_body_wraps_envelope)
{
	json_t *b = sbx_error_body_from_envelope(sbx_envelope_new("S002", "abc"));
	CHECK_STR(json_string_value(json_object_get(b, "code")), "invocation_failed");
	const char *m = json_string_value(json_object_get(b, "message"));
	CHECK(strncmp(m, "handler error: {", 16) == 0);
	json_t *inner = json_loads(m + strlen("handler error: "), 0, NULL);
	CHECK(inner != NULL);
	CHECK_STR(json_string_value(json_object_get(inner, "message")), "sandbox not found: abc");
	CHECK_STR(json_string_value(json_object_get(inner, "fix_note")), "the sandbox is gone; call sandbox::create first");
	json_decref(inner);
	json_decref(b);
}

TEST(error_body_decode)
{
	sbx_error_t err = NULL;
	sbx_error_scode(&err, SBX_SCODE_DECODE, "missing field `path`");
	json_t *b = sbx_error_body_from_error(err, NULL, "", NULL);
	CHECK_STR(json_string_value(json_object_get(b, "code")), "invocation_failed");
	CHECK_STR(json_string_value(json_object_get(b, "message")), "serialization error: missing field `path`");
	json_decref(b);
	/* A decode error inside run is not wrapped. */
	b = sbx_error_body_from_error(err, "create", "", NULL);
	CHECK_STR(json_string_value(json_object_get(b, "message")), "serialization error: missing field `path`");
	json_decref(b);
	sbx_error_free(&err);
}

TEST(error_body_without_scode_is_s300)
{
	sbx_error_t err = NULL;
	sbx_error_set(&err, 0, "qemu died");
	json_t *b = sbx_error_body_from_error(err, NULL, "", NULL);
	CHECK(strstr(json_string_value(json_object_get(b, "message")), "\"code\":\"S300\"") != NULL);
	json_decref(b);
	sbx_error_free(&err);
}

/* Extra members (a timed-out exec's output) come after the envelope's own,
 * in the run wrapping too, and never replace one of them. */
TEST(error_body_extra_members)
{
	sbx_error_t err = NULL;
	sbx_error_scode(&err, "S200", "exec timed out after 1500 ms");
	json_t *extra = json_pack("{s:s, s:s, s:b, s:b, s:s}", "stdout", "start\n", "stderr", "", "stdout_truncated", 0,
				  "stderr_truncated", 1, "code", "S999");
	json_t *b = sbx_error_body_from_error(err, NULL, "", extra);
	CHECK_STR(json_string_value(json_object_get(b, "message")),
		  "handler error: {\"type\":\"execution\",\"code\":\"S200\",\"message\":\"exec timed out after 1500 "
		  "ms\",\"docs_url\":\"" DOCS "S200\",\"retryable\":false,\"fix\":null,\"fix_note\":\"raise `timeout_ms` on "
		  "the exec call or split the work into smaller steps\",\"stdout\":\"start\\n\",\"stderr\":\"\","
		  "\"stdout_truncated\":false,\"stderr_truncated\":true}");
	json_decref(b);
	b = sbx_error_body_from_error(err, "exec", "0f8fad5b-d9cb-469f-a165-70867728950e", extra);
	CHECK_STR(json_string_value(json_object_get(b, "message")),
		  "handler error: {\"type\":\"execution\",\"code\":\"S200\",\"message\":\"during sandbox::run step "
		  "`exec` (sandbox_id=0f8fad5b-d9cb-469f-a165-70867728950e): exec timed out after 1500 ms\",\"docs_url\":\"" DOCS
		  "S200\",\"retryable\":false,\"fix\":{\"context\":\"during sandbox::run step `exec`\",\"sandbox_id\":"
		  "\"0f8fad5b-d9cb-469f-a165-70867728950e\",\"inner_code\":\"S200\"},\"fix_note\":null,\"stdout\":"
		  "\"start\\n\",\"stderr\":\"\",\"stdout_truncated\":false,\"stderr_truncated\":true}");
	json_decref(b);
	json_decref(extra);
	sbx_error_free(&err);
}
