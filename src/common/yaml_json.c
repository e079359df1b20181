#include "common/yaml_json.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define STR_(x) #x
#define STR(x) STR_(x)
#define PATH_SHOWN 200 /* a key path longer than this is cut in messages */

struct conv {
	yaml_parser_t parser;
	size_t events;
	const char *const *text_keys;
	char path[PATH_SHOWN + 8];
	size_t path_len;
	sbx_error_t *err;
};

static int fail(struct conv *c, const yaml_event_t *ev, const char *what)
{
	unsigned long line = ev != NULL ? (unsigned long)ev->start_mark.line + 1 : 0;
	if (c->path_len > 0)
		return sbx_error_set(c->err, EINVAL, "%s at `%s` (line %lu)", what, c->path, line);
	return sbx_error_set(c->err, EINVAL, "%s (line %lu)", what, line);
}

static int next(struct conv *c, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&c->parser, ev)) {
		const char *problem = c->parser.problem != NULL ? c->parser.problem : "cannot parse";
		return sbx_error_set(c->err, EINVAL, "YAML syntax: %s (line %lu)", problem,
				     (unsigned long)c->parser.problem_mark.line + 1);
	}
	if (++c->events > YAML_JSON_MAX_EVENTS) {
		yaml_event_delete(ev);
		return sbx_error_set(c->err, E2BIG, "more than %u YAML events", YAML_JSON_MAX_EVENTS);
	}
	return 0;
}

/* Appends ".key" (or "key" at the top) or "[i]" to the path; returns the
 * old length for path_pop.  A path too long to show ends in "...". */
static size_t path_push(struct conv *c, const char *key, size_t index)
{
	size_t old = c->path_len;
	char part[PATH_SHOWN + 8];
	if (key != NULL)
		snprintf(part, sizeof(part), "%s%s", old > 0 ? "." : "", key);
	else
		snprintf(part, sizeof(part), "[%zu]", index);
	size_t room = PATH_SHOWN - old, n = strlen(part);
	if (old >= PATH_SHOWN || n > room) {
		if (old < PATH_SHOWN) {
			memcpy(c->path + old, part, room);
			memcpy(c->path + PATH_SHOWN, "...", 4);
		}
		c->path_len = PATH_SHOWN + 3;
		return old;
	}
	memcpy(c->path + old, part, n + 1);
	c->path_len = old + n;
	return old;
}

static void path_pop(struct conv *c, size_t old)
{
	c->path_len = old;
	c->path[old < sizeof(c->path) ? old : 0] = '\0';
}

static bool is_one_of(const char *s, const char *const *set)
{
	for (size_t i = 0; set != NULL && set[i] != NULL; i++) {
		if (strcmp(s, set[i]) == 0)
			return true;
	}
	return false;
}

/* [-+]?digits, [-+]?(digits[.digits*]|.digits)([eE][-+]?digits)? */
static bool looks_integer(const char *s)
{
	if (*s == '-' || *s == '+')
		s++;
	if (*s == '\0')
		return false;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9')
			return false;
	}
	return true;
}

static bool looks_float(const char *s)
{
	size_t digits = 0;
	if (*s == '-' || *s == '+')
		s++;
	for (; *s >= '0' && *s <= '9'; s++)
		digits++;
	if (*s == '.') {
		for (s++; *s >= '0' && *s <= '9'; s++)
			digits++;
	}
	if (digits == 0)
		return false;
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '-' || *s == '+')
			s++;
		if (*s < '0' || *s > '9')
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return *s == '\0';
}

static json_t *typed_plain(const char *s)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL", NULL };
	static const char *const trues[] = { "true", "True", "TRUE", NULL };
	static const char *const falses[] = { "false", "False", "FALSE", NULL };
	if (is_one_of(s, nulls))
		return json_null();
	if (is_one_of(s, trues))
		return json_true();
	if (is_one_of(s, falses))
		return json_false();
	if (looks_integer(s)) {
		errno = 0;
		long long v = strtoll(s, NULL, 10);
		if (errno == 0)
			return json_integer(v);
	} else if (looks_float(s)) {
		double d = strtod(s, NULL);
		return isfinite(d) ? json_real(d) : json_string(s);
	}
	return json_string(s);
}

static json_t *scalar(struct conv *c, const yaml_event_t *ev, bool text)
{
	const char *s = (const char *)ev->data.scalar.value;
	size_t n = ev->data.scalar.length;
	if (strlen(s) != n)
		return fail(c, ev, "a scalar holds a NUL byte"), NULL;
	const char *tag = (const char *)ev->data.scalar.tag;
	bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
		     (tag == NULL || strcmp(tag, YAML_STR_TAG) != 0);
	json_t *v = plain && !text ? typed_plain(s) : json_stringn(s, n);
	if (v == NULL)
		fail(c, ev, "a scalar is not valid UTF-8");
	return v;
}

static json_t *node(struct conv *c, yaml_event_t *ev, bool text, int depth);

static json_t *sequence(struct conv *c, bool text, int depth)
{
	json_t *arr = json_array();
	for (size_t i = 0; arr != NULL; i++) {
		yaml_event_t ev;
		if (next(c, &ev) < 0)
			break;
		if (ev.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&ev);
			return arr;
		}
		size_t old = path_push(c, NULL, i);
		json_t *v = node(c, &ev, text, depth + 1);
		path_pop(c, old);
		if (v == NULL || json_array_append_new(arr, v) < 0)
			break;
	}
	json_decref(arr);
	return NULL;
}

static json_t *mapping(struct conv *c, bool text, int depth)
{
	json_t *obj = json_object();
	while (obj != NULL) {
		yaml_event_t kev, vev;
		if (next(c, &kev) < 0)
			break;
		if (kev.type == YAML_MAPPING_END_EVENT) {
			yaml_event_delete(&kev);
			return obj;
		}
		if (kev.type != YAML_SCALAR_EVENT) {
			fail(c, &kev, kev.type == YAML_ALIAS_EVENT ? "aliases (*name) are not supported"
								  : "a key that is not a scalar");
			yaml_event_delete(&kev);
			break;
		}
		const char *key = (const char *)kev.data.scalar.value;
		if (strlen(key) != kev.data.scalar.length) {
			fail(c, &kev, "a key holds a NUL byte");
			yaml_event_delete(&kev);
			break;
		}
		size_t old = path_push(c, key, 0);
		bool dup = json_object_get(obj, key) != NULL;
		if (dup)
			fail(c, &kev, "duplicate key");
		bool child_text = text || (depth == 0 && is_one_of(key, c->text_keys));
		json_t *v = !dup && next(c, &vev) == 0 ? node(c, &vev, child_text, depth + 1) : NULL;
		int rc = v != NULL ? json_object_set_new(obj, key, v) : -1;
		yaml_event_delete(&kev);
		path_pop(c, old);
		if (rc < 0)
			break;
	}
	json_decref(obj);
	return NULL;
}

/* Takes `ev` (deletes it). */
static json_t *node(struct conv *c, yaml_event_t *ev, bool text, int depth)
{
	json_t *v = NULL;
	if (depth > YAML_JSON_MAX_DEPTH)
		fail(c, ev, "nesting too deep (more than " STR(YAML_JSON_MAX_DEPTH) " levels)");
	else if (ev->type == YAML_SCALAR_EVENT)
		v = scalar(c, ev, text);
	else if (ev->type == YAML_SEQUENCE_START_EVENT)
		v = sequence(c, text, depth);
	else if (ev->type == YAML_MAPPING_START_EVENT)
		v = mapping(c, text, depth);
	else if (ev->type == YAML_ALIAS_EVENT)
		fail(c, ev, "aliases (*name) are not supported");
	else
		fail(c, ev, "unexpected YAML event");
	yaml_event_delete(ev);
	return v;
}

/* Expects an event of `type`; 0 or -1. */
static int expect(struct conv *c, yaml_event_type_t type, const char *what)
{
	yaml_event_t ev;
	if (next(c, &ev) < 0)
		return -1;
	int rc = ev.type == type ? 0 : fail(c, &ev, what);
	yaml_event_delete(&ev);
	return rc;
}

static json_t *document(struct conv *c)
{
	yaml_event_t ev;
	if (expect(c, YAML_STREAM_START_EVENT, "no YAML stream") < 0 || next(c, &ev) < 0)
		return NULL;
	if (ev.type == YAML_STREAM_END_EVENT) {
		yaml_event_delete(&ev);
		return json_null();
	}
	int rc = ev.type == YAML_DOCUMENT_START_EVENT ? 0 : fail(c, &ev, "no YAML document");
	yaml_event_delete(&ev);
	if (rc < 0 || next(c, &ev) < 0)
		return NULL;
	json_t *root = node(c, &ev, false, 0);
	if (root != NULL && (expect(c, YAML_DOCUMENT_END_EVENT, "document end expected") < 0 ||
			     expect(c, YAML_STREAM_END_EVENT, "more than one YAML document") < 0)) {
		json_decref(root);
		return NULL;
	}
	return root;
}

json_t *yaml_to_json(const char *text, size_t len, const char *const *text_keys, sbx_error_t *err)
{
	struct conv c = { .text_keys = text_keys, .err = err };
	if (!yaml_parser_initialize(&c.parser))
		return sbx_error_set(err, ENOMEM, "YAML parser"), NULL;
	yaml_parser_set_input_string(&c.parser, (const unsigned char *)text, len);
	json_t *root = document(&c);
	yaml_parser_delete(&c.parser);
	if (root == NULL && *err == NULL)
		sbx_error_set(err, ENOMEM, "YAML to JSON");
	return root;
}
