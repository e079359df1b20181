#include "common/log_line.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Room always kept at the end: "..." and the quote of a cut string, the
 * closing brace, the newline. */
#define TAIL 8
/* What the message leaves for the fields when it is long. */
#define FIELDS_ROOM 1024

static const char *const level_names[] = { "debug", "info", "warn", "error" };

struct out {
	char *buf;
	size_t cap;
	size_t len;
};

/* The caller has checked the room. */
static void put(struct out *o, const char *s, size_t n)
{
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static bool room(const struct out *o, size_t n)
{
	return o->len + n + TAIL <= o->cap;
}

/* Length of the valid UTF-8 sequence at s[0..n), 0 when it is not one
 * (overlong forms, surrogates and code points past U+10FFFF included). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len;
	uint32_t cp, min;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2, cp = c & 0x1f, min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3, cp = c & 0x0f, min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4, cp = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* The escaped form of the character at s into p[8]; returns its length
 * and sets *used to the bytes of s it stands for. */
static size_t escape_one(const unsigned char *s, size_t n, char p[8], size_t *used)
{
	size_t u = utf8_len(s, n);
	*used = u > 0 ? u : 1;
	if (u == 0) {
		memcpy(p, "\\ufffd", 6);
		return 6;
	}
	if (u > 1) {
		memcpy(p, s, u);
		return u;
	}
	switch (s[0]) {
	case '"':
		return memcpy(p, "\\\"", 2), 2;
	case '\\':
		return memcpy(p, "\\\\", 2), 2;
	case '\n':
		return memcpy(p, "\\n", 2), 2;
	case '\r':
		return memcpy(p, "\\r", 2), 2;
	case '\t':
		return memcpy(p, "\\t", 2), 2;
	default:
		break;
	}
	if (s[0] < 0x20 || s[0] == 0x7f)
		return (size_t)snprintf(p, 8, "\\u%04x", s[0]);
	p[0] = (char)s[0];
	return 1;
}

/* Writes s, escaped or as it is, without passing o->len == stop (at most
 * cap - TAIL); a string that does not fit ends in "..." and gives false. */
static bool put_str(struct out *o, const char *str, size_t stop, bool escape)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = strlen(str);
	while (n > 0) {
		char p[8];
		size_t used = 1, len = 1;
		if (escape)
			len = escape_one(s, n, p, &used);
		else
			p[0] = (char)s[0];
		if (o->len + len > stop) {
			put(o, "...", 3);
			return false;
		}
		put(o, p, len);
		s += used;
		n -= used;
	}
	return true;
}

/* A text value is quoted when it would not read back as one word. */
static bool needs_quotes(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = strlen(str);
	if (n == 0)
		return true;
	while (n > 0) {
		size_t u = utf8_len(s, n);
		if (u == 0 || (u == 1 && (s[0] <= ' ' || s[0] == '"' || s[0] == '=' || s[0] == '\\' || s[0] == 0x7f)))
			return true;
		s += u;
		n -= u;
	}
	return false;
}

static void put_num(struct out *o, int64_t v)
{
	char d[24];
	int len = snprintf(d, sizeof(d), "%" PRId64, v);
	put(o, d, (size_t)len);
}

/* One field; false when the line is full. */
static bool put_field(struct out *o, bool json, const struct sbx_log_field *f)
{
	if (!f->is_num && f->str == NULL)
		return true;
	if (!room(o, strlen(f->key) + 32))
		return false;
	puts_(o, json ? ",\"" : " ");
	puts_(o, f->key);
	puts_(o, json ? "\":" : "=");
	if (f->is_num) {
		put_num(o, f->num);
		return true;
	}
	bool quote = json || needs_quotes(f->str);
	if (quote)
		put(o, "\"", 1);
	bool whole = put_str(o, f->str, o->cap - TAIL, quote);
	if (quote)
		put(o, "\"", 1);
	return whole;
}

size_t sbx_log_line(char *buf, size_t cap, enum sbx_log_format format, const struct timespec *ts,
		    enum sbx_log_level level, const struct sbx_log_field *fields, size_t n, const char *msg)
{
	struct out o = { buf, cap, 0 };
	bool json = format == SBX_LOG_JSON;
	struct tm tm;
	gmtime_r(&ts->tv_sec, &tm);
	char head[96];
	int hl = snprintf(head, sizeof(head),
			  json ? "{\"time\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\",\"level\":\"%s\",\"msg\":\""
			       : "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s ",
			  tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
			  ts->tv_nsec / 1000000, level_names[level]);
	put(&o, head, (size_t)hl);
	size_t stop = cap - TAIL;
	size_t msg_stop = n == 0 ? stop : stop > 2 * FIELDS_ROOM ? stop - FIELDS_ROOM : o.len + (stop - o.len) / 2;
	put_str(&o, msg, msg_stop, json);
	if (json)
		put(&o, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		if (!put_field(&o, json, &fields[i]))
			break;
	}
	if (json)
		put(&o, "}", 1);
	put(&o, "\n", 1);
	return o.len;
}
