/* Log lines, text and JSON: fields as key=value or as keys, escaping
 * (quotes, control bytes, invalid UTF-8), the length bound, the format
 * chosen from SANDBOX_LOG_FORMAT. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/log_line.h"
#include "harness.h"

/* 2026-12-02T08:20:14.123Z */
static const struct timespec when = { .tv_sec = 1796199614, .tv_nsec = 123456789 };

static char buf[SBX_LOG_LINE_MAX + 1];

static const char *line(enum sbx_log_format f, enum sbx_log_level level, const struct sbx_log_field *fields,
			size_t n, const char *msg)
{
	size_t len = sbx_log_line(buf, SBX_LOG_LINE_MAX, f, &when, level, fields, n, msg);
	buf[len] = '\0';
	return buf;
}

/* The JSON line parsed, NULL unless it is one object ending in one "\n". */
static json_t *parse(const char *s)
{
	size_t len = strlen(s);
	if (len == 0 || s[len - 1] != '\n' || strchr(s, '\n') != s + len - 1)
		return NULL;
	json_t *v = json_loadb(s, len - 1, 0, NULL);
	if (v != NULL && !json_is_object(v)) {
		json_decref(v);
		return NULL;
	}
	return v;
}

TEST(text_plain_line_keeps_its_shape)
{
	CHECK_STR(line(SBX_LOG_TEXT, SBX_LOG_INFO, NULL, 0, "serving sandbox-libkrun::*"),
		  "2026-12-02T08:20:14.123Z info  serving sandbox-libkrun::*\n");
	CHECK_STR(line(SBX_LOG_TEXT, SBX_LOG_WARN, NULL, 0, "x"), "2026-12-02T08:20:14.123Z warn  x\n");
}

TEST(text_fields_are_key_value_quoted_when_needed)
{
	struct sbx_log_field f[] = {
		SBX_LF_STR("fn", "create"),
		SBX_LF_STR("absent", NULL),
		SBX_LF_INT("duration_ms", -12),
		SBX_LF_STR("cause", "a b=\"c\"\\"),
		SBX_LF_STR("ctl", "x\ny\001"),
		SBX_LF_STR("empty", ""),
		SBX_LF_STR("utf8", "caf\xc3\xa9"),
		SBX_LF_STR("bad", "a\xff"),
	};
	CHECK_STR(line(SBX_LOG_TEXT, SBX_LOG_DEBUG, f, sizeof(f) / sizeof(f[0]), "call ended"),
		  "2026-12-02T08:20:14.123Z debug call ended fn=create duration_ms=-12 cause=\"a b=\\\"c\\\"\\\\\" "
		  "ctl=\"x\\ny\\u0001\" empty=\"\" utf8=caf\xc3\xa9 bad=\"a\\ufffd\"\n");
}

TEST(json_line_has_time_level_msg_and_fields_as_keys)
{
	struct sbx_log_field f[] = {
		SBX_LF_STR("fn", "exec"),
		SBX_LF_STR("sandbox_id", NULL),
		SBX_LF_INT("duration_ms", 1234567890123),
		SBX_LF_STR("scode", "S002"),
	};
	json_t *v = parse(line(SBX_LOG_JSON, SBX_LOG_INFO, f, 4, "call failed"));
	CHECK(v != NULL);
	CHECK_STR(json_string_value(json_object_get(v, "time")), "2026-12-02T08:20:14.123Z");
	CHECK_STR(json_string_value(json_object_get(v, "level")), "info");
	CHECK_STR(json_string_value(json_object_get(v, "msg")), "call failed");
	CHECK_STR(json_string_value(json_object_get(v, "fn")), "exec");
	CHECK(json_object_get(v, "sandbox_id") == NULL);
	CHECK(json_is_integer(json_object_get(v, "duration_ms")));
	CHECK_INT(json_integer_value(json_object_get(v, "duration_ms")), 1234567890123);
	CHECK_STR(json_string_value(json_object_get(v, "scode")), "S002");
	CHECK_INT(json_object_size(v), 6);
	json_decref(v);
}

TEST(json_escapes_quotes_controls_and_invalid_utf8)
{
	/* every control byte, quotes, backslash, DEL, valid UTF-8, then
	 * invalid: a lone continuation, an overlong '/', a surrogate, a cut
	 * sequence at the end */
	char msg[64];
	size_t k = 0;
	for (int c = 1; c < 0x20; c++)
		msg[k++] = (char)c;
	const char *rest = "\"\\\x7f\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80|\x80|\xc0\xaf|\xed\xa0\x80|\xe2\x82";
	memcpy(msg + k, rest, strlen(rest) + 1);
	struct sbx_log_field f[] = { SBX_LF_STR("image", "a\"}\n{\"level\":\"error") };
	const char *s = line(SBX_LOG_JSON, SBX_LOG_WARN, f, 1, msg);
	for (const char *p = s; *p != '\n'; p++)
		CHECK((unsigned char)*p >= 0x20 && *p != 0x7f);
	json_t *v = parse(s);
	CHECK(v != NULL);
	char want[128];
	k = 0;
	for (int c = 1; c < 0x20; c++)
		want[k++] = (char)c;
	const char *r = "\"\\\x7f\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80|\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd|"
			"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd";
	memcpy(want + k, r, strlen(r) + 1);
	CHECK_STR(json_string_value(json_object_get(v, "msg")), want);
	CHECK_STR(json_string_value(json_object_get(v, "image")), "a\"}\n{\"level\":\"error");
	CHECK_STR(json_string_value(json_object_get(v, "level")), "warn");
	json_decref(v);
}

static char *filled(size_t n, char c)
{
	char *s = malloc(n + 1);
	if (s != NULL) {
		memset(s, c, n);
		s[n] = '\0';
	}
	return s;
}

TEST(json_long_lines_are_cut_and_stay_json)
{
	char *big = filled(3 * SBX_LOG_LINE_MAX, 'm');
	/* every byte escapes to six: the cut must fall between escapes */
	char *ctl = filled(SBX_LOG_LINE_MAX, '\001');
	CHECK(big != NULL && ctl != NULL);
	struct sbx_log_field f[] = { SBX_LF_STR("fn", "run"), SBX_LF_INT("duration_ms", 7) };
	json_t *v = parse(line(SBX_LOG_JSON, SBX_LOG_INFO, f, 2, big));
	CHECK(strlen(buf) <= SBX_LOG_LINE_MAX);
	CHECK(v != NULL);
	const char *m = json_string_value(json_object_get(v, "msg"));
	CHECK(m != NULL && strlen(m) > 2000 && strcmp(m + strlen(m) - 4, "m...") == 0);
	/* the message leaves room for the fields */
	CHECK_STR(json_string_value(json_object_get(v, "fn")), "run");
	CHECK_INT(json_integer_value(json_object_get(v, "duration_ms")), 7);
	json_decref(v);

	struct sbx_log_field g[] = { SBX_LF_STR("cause", ctl), SBX_LF_STR("after", "x") };
	v = parse(line(SBX_LOG_JSON, SBX_LOG_INFO, g, 2, ctl));
	CHECK(strlen(buf) <= SBX_LOG_LINE_MAX);
	CHECK(v != NULL);
	const char *c = json_string_value(json_object_get(v, "cause"));
	CHECK(c != NULL && strlen(c) > 100 && strcmp(c + strlen(c) - 3, "...") == 0);
	CHECK(json_object_get(v, "after") == NULL);
	json_decref(v);
	free(big);
	free(ctl);
}

TEST(text_long_lines_are_cut_and_say_so)
{
	char *big = filled(2 * SBX_LOG_LINE_MAX, 'm');
	CHECK(big != NULL);
	const char *s = line(SBX_LOG_TEXT, SBX_LOG_INFO, NULL, 0, big);
	CHECK(strlen(s) <= SBX_LOG_LINE_MAX && strlen(s) > SBX_LOG_LINE_MAX - 16);
	CHECK(strcmp(s + strlen(s) - 5, "m...\n") == 0);
	free(big);
}

/* Runs fn with stderr in a file; returns what it wrote (malloc'd). */
static char *capture_stderr(void (*fn)(void))
{
	FILE *f = tmpfile();
	int saved = dup(2);
	if (f == NULL || saved < 0 || dup2(fileno(f), 2) < 0)
		return NULL;
	fn();
	dup2(saved, 2);
	close(saved);
	long n = ftell(f);
	char *s = n >= 0 ? calloc(1, (size_t)n + 1) : NULL;
	if (s != NULL) {
		rewind(f);
		if (fread(s, 1, (size_t)n, f) != (size_t)n)
			s[0] = '\0';
	}
	fclose(f);
	return s;
}

static void json_lines(void)
{
	sbx_log_set_format(SBX_LOG_JSON);
	sbx_log_set_level(SBX_LOG_INFO);
	struct sbx_log_field f[] = { SBX_LF_STR("sandbox_id", "id-1"), SBX_LF_STR("reason", "caller") };
	sbx_debug("hidden");
	sbx_log_kv(SBX_LOG_INFO, f, "sandbox %s stopped", "id-1");
	sbx_warn("plain %d", 5);
	sbx_log_set_format(SBX_LOG_TEXT);
}

TEST(log_writes_json_lines_in_json_format)
{
	char *out = capture_stderr(json_lines);
	CHECK(out != NULL);
	char *nl = strchr(out, '\n');
	CHECK(nl != NULL);
	*nl = '\0';
	json_t *a = json_loads(out, 0, NULL);
	json_t *b = json_loads(nl + 1, JSON_DISABLE_EOF_CHECK, NULL);
	CHECK(a != NULL && b != NULL);
	CHECK_STR(json_string_value(json_object_get(a, "msg")), "sandbox id-1 stopped");
	CHECK_STR(json_string_value(json_object_get(a, "reason")), "caller");
	CHECK_STR(json_string_value(json_object_get(b, "msg")), "plain 5");
	CHECK_STR(json_string_value(json_object_get(b, "level")), "warn");
	CHECK(strstr(nl + 1, "\n") != NULL && strchr(strchr(nl + 1, '\n') + 1, '\n') == NULL);
	json_decref(a);
	json_decref(b);
	free(out);
}

TEST(log_format_from_env_names_an_unknown_value)
{
	sbx_error_t err = NULL;
	setenv("SANDBOX_LOG_FORMAT", "yaml", 1);
	CHECK_INT(sbx_log_format_from_env(&err), -1);
	CHECK(strstr(sbx_error_msg(err), "SANDBOX_LOG_FORMAT=yaml") != NULL);
	sbx_error_free(&err);
	setenv("SANDBOX_LOG_FORMAT", "JSON", 1);
	CHECK_INT(sbx_log_format_from_env(&err), 0);
	setenv("SANDBOX_LOG_FORMAT", "", 1);
	CHECK_INT(sbx_log_format_from_env(&err), 0);
	unsetenv("SANDBOX_LOG_FORMAT");
}
