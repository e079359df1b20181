#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/fs/octal.h"
#include "adapter/request.h"
#include "adapter/sandbox/env.h"
#include "adapter/sandbox/exec_shape.h"
#include "adapter/sandbox/shlex.h"
#include "adapter/scode.h"
#include "common/base64.h"
#include "harness.h"

static char *split(const char *s)
{
	sbx_error_t err = NULL;
	json_t *w = sbx_shlex_split(s, &err);
	if (w == NULL) {
		sbx_error_free(&err);
		return NULL;
	}
	char *out = json_dumps(w, JSON_COMPACT);
	json_decref(w);
	return out;
}

#define CHECK_SPLIT(in, expected)          \
	do {                               \
		char *_s = split(in);      \
		CHECK(_s != NULL);         \
		int _ok = strcmp(_s, expected) == 0; \
		if (!_ok)                  \
			sbx_test_fail(__FILE__, __LINE__, "split(%s) = %s, expected %s", in, _s, expected); \
		free(_s);                  \
		if (!_ok)                  \
			return;            \
	} while (0)

TEST(shlex_quotes_and_escapes)
{
	CHECK_SPLIT("python3 -c 'print(2+2)'", "[\"python3\",\"-c\",\"print(2+2)\"]");
	CHECK_SPLIT("echo \"a b\" c", "[\"echo\",\"a b\",\"c\"]");
	CHECK_SPLIT("a\\ b c", "[\"a b\",\"c\"]");
	CHECK_SPLIT("\"x\\\"y\" \"\\$HOME\" \"\\q\"", "[\"x\\\"y\",\"$HOME\",\"\\\\q\"]");
	CHECK_SPLIT("'it'\"'\"'s'", "[\"it's\"]");
	CHECK_SPLIT("'a\\b'", "[\"a\\\\b\"]");
	CHECK_SPLIT("'' x", "[\"\",\"x\"]");
	CHECK_SPLIT("  a\t\tb\nc  ", "[\"a\",\"b\",\"c\"]");
	CHECK_SPLIT("a\\\nb", "[\"ab\"]");
}

TEST(shlex_operators_and_vars_are_literal)
{
	CHECK_SPLIT("echo $HOME && ls | wc > /tmp/x; true", "[\"echo\",\"$HOME\",\"&&\",\"ls\",\"|\",\"wc\",\">\","
							      "\"/tmp/x;\",\"true\"]");
	CHECK_SPLIT("a#b # comment\nc", "[\"a#b\",\"c\"]");
}

TEST(shlex_unbalanced_and_empty)
{
	CHECK(split("node 'x") == NULL);
	CHECK(split("echo \"abc") == NULL);
	CHECK(split("echo abc\\") == NULL);
	CHECK(split("echo \"abc\\") == NULL);
	CHECK_SPLIT("   ", "[]");
	CHECK_SPLIT("", "[]");
	CHECK_SPLIT("# only a comment", "[]");
}

static json_t *J(const char *text)
{
	return json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
}

/* Resolves a shape and returns the argv as compact JSON, or the error code
 * and message as "S001: ...". */
static char *shape(const char *cmd, const char *args, const char *argv)
{
	json_t *ja = args ? J(args) : NULL, *jv = argv ? J(argv) : NULL;
	sbx_error_t err = NULL;
	json_t *r = exec_shape_resolve(cmd, ja, jv, &err);
	char *out = NULL;
	if (r != NULL) {
		out = json_dumps(r, JSON_COMPACT);
		json_decref(r);
	} else if (asprintf(&out, "%s: %s", err->scode, sbx_error_msg(err)) < 0) {
		out = NULL;
	}
	sbx_error_free(&err);
	json_decref(ja);
	json_decref(jv);
	return out;
}

#define CHECK_SHAPE(cmd, args, argv, expected)                                                       \
	do {                                                                                         \
		char *_s = shape(cmd, args, argv);                                                   \
		int _ok = _s != NULL && strcmp(_s, expected) == 0;                                   \
		if (!_ok)                                                                            \
			sbx_test_fail(__FILE__, __LINE__, "got %s, expected %s", _s ? _s : "(null)", expected); \
		free(_s);                                                                            \
		if (!_ok)                                                                            \
			return;                                                                      \
	} while (0)

#define CHECK_SHAPE_PREFIX(cmd, args, argv, prefix)                                                   \
	do {                                                                                          \
		char *_s = shape(cmd, args, argv);                                                    \
		int _ok = _s != NULL && strncmp(_s, prefix, strlen(prefix)) == 0;                     \
		if (!_ok)                                                                             \
			sbx_test_fail(__FILE__, __LINE__, "got %s, expected prefix %s", _s ? _s : "(null)", prefix); \
		free(_s);                                                                             \
		if (!_ok)                                                                             \
			return;                                                                       \
	} while (0)

TEST(exec_shapes_resolve)
{
	CHECK_SHAPE("node", "[\"-v\"]", NULL, "[\"node\",\"-v\"]");
	CHECK_SHAPE("node -v", NULL, NULL, "[\"node\",\"-v\"]");
	CHECK_SHAPE("node -v", "[]", "[]", "[\"node\",\"-v\"]");
	CHECK_SHAPE(NULL, NULL, "[\"sh\",\"-c\",\"echo $HOME && pwd\"]", "[\"sh\",\"-c\",\"echo $HOME && pwd\"]");
	CHECK_SHAPE("", "[]", "[\"python\"]", "[\"python\"]");
	CHECK_SHAPE("/bin/true", NULL, NULL, "[\"/bin/true\"]");
}

TEST(exec_shapes_errors)
{
	CHECK_SHAPE_PREFIX("node -v", "[\"x\"]", NULL,
			   "S001: cmd contains whitespace (shell-line shape) AND `args` is set; that is ambiguous.");
	CHECK_SHAPE("node 'x", NULL, NULL,
		    "S001: cmd has unbalanced quotes and cannot be shlex-split: \"node 'x\". Use `argv: [...]` for argv "
		    "arrays with embedded quotes.");
	CHECK_SHAPE("node", NULL, "[\"python\"]",
		    "S001: `argv` cannot be combined with `cmd` or `args`. Pick one shape. Got argv=[\"python\"], "
		    "cmd=\"node\", args=[]");
	CHECK_SHAPE_PREFIX(NULL, "[\"a\"]", "[\"python\"]", "S001: `argv` cannot be combined");
	CHECK_SHAPE("", NULL, NULL,
		    "S001: cmd is required and must be non-empty (or pass `argv` with at least one element)");
	CHECK_SHAPE(NULL, "[\"x\"]", NULL,
		    "S001: cmd is required and must be non-empty (or pass `argv` with at least one element)");
	CHECK_SHAPE("  ", NULL, NULL, "S001: cmd is empty after shlex split: \"  \"");
	CHECK_SHAPE(NULL, NULL, "[\"\"]",
		    "S001: cmd is required and must be non-empty (or pass `argv` with at least one element)");
	CHECK_SHAPE("'' x", NULL, NULL,
		    "S001: cmd is required and must be non-empty (or pass `argv` with at least one element)");
}

static char *env_of(const char *text)
{
	json_t *req = J(text);
	sbx_error_t err = NULL;
	json_t *env = NULL;
	char *out = NULL;
	if (env_decode(req, "env", &env, &err) < 0) {
		if (asprintf(&out, "%s: %s", err->scode, sbx_error_msg(err)) < 0)
			out = NULL;
	} else {
		json_t *kv = env_resolve(env, &err);
		if (kv != NULL) {
			out = json_dumps(kv, JSON_COMPACT);
			json_decref(kv);
		} else if (asprintf(&out, "%s: %s", err->scode, sbx_error_msg(err)) < 0) {
			out = NULL;
		}
	}
	sbx_error_free(&err);
	json_decref(req);
	return out;
}

TEST(env_list_and_map)
{
	char *s = env_of("{\"env\":[\"9bad=x\",\"noequals\",\"A=1\"]}");
	CHECK_STR(s, "[\"9bad=x\",\"noequals\",\"A=1\"]");
	free(s);
	s = env_of("{\"env\":{\"b\":\"2\",\"A\":\"1\",\"_x9\":\"=\"}}");
	CHECK_STR(s, "[\"A=1\",\"_x9==\",\"b=2\"]");
	free(s);
	s = env_of("{}");
	CHECK_STR(s, "[]");
	free(s);
	s = env_of("{\"env\":null}");
	CHECK_STR(s, "[]");
	free(s);
}

TEST(env_map_bad_names_listed)
{
	char *s = env_of("{\"env\":{\"9bad\":\"x\",\"ok\":\"1\",\"a-b\":\"2\",\"\":\"3\"}}");
	CHECK_STR(s, "S001: env contains invalid variable name(s): [\"\", \"9bad\", \"a-b\"]. Names must match "
		     "`[A-Za-z_][A-Za-z0-9_]*`.");
	free(s);
}

TEST(env_wrong_shapes_are_decode_errors)
{
	const char *bad[] = { "{\"env\":\"A=1\"}", "{\"env\":[1]}", "{\"env\":{\"A\":1}}", "{\"env\":true}" };
	for (size_t i = 0; i < 4; i++) {
		char *s = env_of(bad[i]);
		CHECK(s != NULL && strncmp(s, "decode: data did not match any variant", 38) == 0);
		free(s);
	}
}

TEST(env_nul_bytes_are_s001)
{
	char *s = env_of("{\"env\":[\"A=1\",\"B\\u0000=1\"]}");
	CHECK_STR(s, "S001: env contains a NUL byte");
	free(s);
	s = env_of("{\"env\":{\"A\":\"x\\u0000y\"}}");
	CHECK_STR(s, "S001: env contains a NUL byte");
	free(s);
}

TEST(octal_modes)
{
	sbx_error_t err = NULL;
	unsigned m = 1;
	CHECK_INT(octal_mode_parse("0", &m, &err), 0);
	CHECK_INT(m, 0);
	CHECK_INT(octal_mode_parse("0000", &m, &err), 0);
	CHECK_INT(m, 0);
	CHECK_INT(octal_mode_parse("755", &m, &err), 0);
	CHECK_INT(m, 0755);
	CHECK_INT(octal_mode_parse("0755", &m, &err), 0);
	CHECK_INT(m, 0755);
	CHECK_INT(octal_mode_parse("7777", &m, &err), 0);
	CHECK_INT(m, 07777);
	CHECK_INT(octal_mode_parse("00644", &m, &err), 0);
	CHECK_INT(m, 0644);
	const char *bad[] = { "", "8", "0x1ff", "rwx", "12345", "-1", " 755", "75 5" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_INT(octal_mode_parse(bad[i], &m, &err), -1);
		CHECK_STR(err->scode, "S210");
		sbx_error_free(&err);
	}
	octal_mode_parse("9", &m, &err);
	CHECK_STR(sbx_error_msg(err), "invalid octal mode: 9");
	sbx_error_free(&err);
}

TEST(base64_decode_strict)
{
	sbx_error_t err = NULL;
	size_t n = 0;
	unsigned char *b = sbx_base64_decode("aGkK", 4, &n, &err);
	CHECK(b != NULL);
	CHECK_INT(n, 3);
	CHECK(memcmp(b, "hi\n", 3) == 0);
	free(b);
	b = sbx_base64_decode("", 0, &n, &err);
	CHECK(b != NULL);
	CHECK_INT(n, 0);
	free(b);
	b = sbx_base64_decode("aGk=", 4, &n, &err);
	CHECK(b != NULL && n == 2 && memcmp(b, "hi", 2) == 0);
	free(b);
	b = sbx_base64_decode("aA==", 4, &n, &err);
	CHECK(b != NULL && n == 1 && b[0] == 'h');
	free(b);
	b = sbx_base64_decode("+/+/", 4, &n, &err);
	CHECK(b != NULL && n == 3 && b[0] == 0xfb && b[1] == 0xff && b[2] == 0xbf);
	free(b);
	const char *bad[] = { "!!!", "!!!!", "aGk", "aGkK=", "a===", "====", "aG=k", "aGk=aGkK", "aB==", "aGl=",
			      "aGk_", "aGk-" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		b = sbx_base64_decode(bad[i], strlen(bad[i]), &n, &err);
		if (b != NULL)
			sbx_test_fail(__FILE__, __LINE__, "accepted %s", bad[i]);
		CHECK(b == NULL);
		sbx_error_free(&err);
	}
}

TEST(base64_round_trip)
{
	unsigned char data[256];
	for (int i = 0; i < 256; i++)
		data[i] = (unsigned char)(255 - i);
	for (size_t len = 0; len <= sizeof(data); len += 37) {
		sbx_error_t err = NULL;
		char *enc = sbx_base64_encode(data, len, &err);
		CHECK(enc != NULL);
		CHECK_INT(strlen(enc), (len + 2) / 3 * 4);
		size_t n;
		unsigned char *dec = sbx_base64_decode(enc, strlen(enc), &n, &err);
		CHECK(dec != NULL);
		CHECK_INT(n, len);
		CHECK(memcmp(dec, data, len) == 0);
		free(enc);
		free(dec);
	}
}

TEST(sandbox_uuid_every_form)
{
	const char *canon = "0f8fad5b-d9cb-469f-a165-70867728950e";
	const char *forms[] = { "0f8fad5b-d9cb-469f-a165-70867728950e", "0F8FAD5B-D9CB-469F-A165-70867728950E",
				"0f8fad5bd9cb469fa16570867728950e", "{0f8fad5b-d9cb-469f-a165-70867728950e}",
				"urn:uuid:0f8fad5b-d9cb-469f-a165-70867728950e" };
	for (size_t i = 0; i < 5; i++) {
		char out[SBX_UUID_STRLEN + 1];
		sbx_error_t err = NULL;
		CHECK_INT(req_sandbox_uuid(forms[i], out, &err), 0);
		CHECK_STR(out, canon);
	}
	const char *bad[] = { "not-a-uuid", "", "0f8fad5b-d9cb-469f-a165-70867728950", "0f8fad5b-d9cb-469f-a165-70867728950ez" };
	for (size_t i = 0; i < 4; i++) {
		char out[SBX_UUID_STRLEN + 1];
		sbx_error_t err = NULL;
		CHECK_INT(req_sandbox_uuid(bad[i], out, &err), -1);
		CHECK_STR(err->scode, "S001");
		sbx_error_free(&err);
	}
	sbx_error_t err = NULL;
	char out[SBX_UUID_STRLEN + 1];
	req_sandbox_uuid("not-a-uuid", out, &err);
	CHECK_STR(sbx_error_msg(err), "sandbox_id is not a valid UUID: not-a-uuid");
	sbx_error_free(&err);
}

TEST(request_field_types)
{
	json_t *req = J("{\"s\":\"x\",\"n\":5,\"neg\":-1,\"b\":true,\"f\":1.5,\"arr\":[\"a\",2],\"nul\":null,"
			"\"big\":4294967296}");
	sbx_error_t err = NULL;
	const char *s;
	CHECK_INT(req_string(req, "s", true, &s, &err), 0);
	CHECK_STR(s, "x");
	CHECK_INT(req_string(req, "missing", false, &s, &err), 0);
	CHECK(s == NULL);
	CHECK_INT(req_string(req, "nul", false, &s, &err), 0);
	CHECK(s == NULL);
	CHECK_INT(req_string(req, "missing", true, &s, &err), -1);
	CHECK_STR(err->scode, SBX_SCODE_DECODE);
	CHECK_STR(sbx_error_msg(err), "missing field `missing`");
	sbx_error_free(&err);
	CHECK_INT(req_string(req, "n", true, &s, &err), -1);
	CHECK_STR(sbx_error_msg(err), "invalid type: integer `5`, expected a string for field `n`");
	sbx_error_free(&err);
	uint64_t u;
	CHECK_INT(req_u64(req, "n", 7, &u, &err), 0);
	CHECK_INT(u, 5);
	CHECK_INT(req_u64(req, "missing", 7, &u, &err), 0);
	CHECK_INT(u, 7);
	CHECK_INT(req_u64(req, "neg", 7, &u, &err), -1);
	sbx_error_free(&err);
	CHECK_INT(req_u64(req, "f", 7, &u, &err), -1);
	CHECK_STR(sbx_error_msg(err), "invalid type: floating point `1.5`, expected u64 for field `f`");
	sbx_error_free(&err);
	uint32_t u32;
	CHECK_INT(req_u32(req, "big", 1, &u32, &err), -1);
	sbx_error_free(&err);
	bool b;
	CHECK_INT(req_bool(req, "b", false, &b, &err), 0);
	CHECK(b);
	CHECK_INT(req_bool(req, "s", false, &b, &err), -1);
	CHECK_STR(sbx_error_msg(err), "invalid type: string, expected a boolean for field `s`");
	sbx_error_free(&err);
	json_t *arr;
	CHECK_INT(req_string_array(req, "arr", &arr, &err), -1);
	sbx_error_free(&err);
	CHECK_INT(req_object(json_null(), &err), -1);
	CHECK_STR(sbx_error_msg(err), "invalid type: null, expected a JSON object");
	sbx_error_free(&err);
	json_decref(req);
}

/* JSON's \u0000 survives decoding; a string that becomes a C string must
 * not be cut short at it, while bytes read by length keep it. */
TEST(request_nul_bytes)
{
	json_t *req = J("{\"s\":\"a\\u0000b\",\"arr\":[\"ok\",\"x\\u0000\"],\"ok\":[\"a\",\"b\"]}");
	CHECK(req != NULL);
	sbx_error_t err = NULL;
	const char *s = "unset";
	CHECK_INT(req_string(req, "s", true, &s, &err), -1);
	CHECK(s == NULL);
	CHECK_STR(err->scode, "S001");
	CHECK_STR(sbx_error_msg(err), "s contains a NUL byte");
	sbx_error_free(&err);
	size_t len;
	CHECK_INT(req_bytes(req, "s", true, &s, &len, &err), 0);
	CHECK_INT(len, 3);
	CHECK(memcmp(s, "a\0b", 3) == 0);
	json_t *arr;
	CHECK_INT(req_string_array(req, "arr", &arr, &err), -1);
	CHECK_STR(err->scode, "S001");
	CHECK_STR(sbx_error_msg(err), "arr contains a NUL byte");
	sbx_error_free(&err);
	CHECK_INT(req_string_array(req, "ok", &arr, &err), 0);
	CHECK_INT(json_array_size(arr), 2);
	json_decref(req);
}

TEST(strv_view_borrows_the_request_strings)
{
	json_t *req = json_loads("{\"argv\": [\"ls\", \"-l\", \"/tmp\"], \"none\": []}", 0, NULL);
	CHECK(req != NULL);
	json_t *arr = NULL;
	sbx_error_t err = NULL;
	CHECK_INT(req_string_array(req, "argv", &arr, &err), 0);
	char **v = req_strv_view(arr, "argv", &err);
	CHECK(v != NULL);
	CHECK_STR(v[0], "ls");
	CHECK_STR(v[2], "/tmp");
	CHECK(v[3] == NULL);
	CHECK(v[0] == json_string_value(json_array_get(arr, 0))); /* borrowed, not copied */
	free(v);
	/* An absent array and an empty one both give an empty view. */
	CHECK_INT(req_string_array(req, "missing", &arr, &err), 0);
	CHECK(arr == NULL);
	v = req_strv_view(arr, "missing", &err);
	CHECK(v != NULL && v[0] == NULL);
	free(v);
	CHECK_INT(req_string_array(req, "none", &arr, &err), 0);
	v = req_strv_view(arr, "none", &err);
	CHECK(v != NULL && v[0] == NULL);
	free(v);
	CHECK(err == NULL);
	json_decref(req);
}
