#include "worker/worker_record_json.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup_json.h"
#include "common/strv.h"

static json_t *nullable(const char *s)
{
	return s != NULL ? json_string(s) : json_null();
}

/* A string vector as an array; a NULL vector as null when `null_ok`. */
static json_t *strv_json(char *const *v, bool null_ok)
{
	if (v == NULL)
		return null_ok ? json_null() : json_array();
	json_t *a = json_array();
	for (size_t i = 0; a != NULL && v[i] != NULL; i++) {
		if (json_array_append_new(a, json_string(v[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

json_t *worker_record_to_json(const struct worker_record *r, sbx_error_t *err)
{
	json_t *j = json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
			      "version", WORKER_RECORD_VERSION, "worker", r->worker, "source",
			      worker_source_name(r->source), "host_path", r->host_path, "base_image", r->base_image,
			      "image_erofs", r->image_erofs, "cpus", (json_int_t)r->cpus, "memory_mb",
			      (json_int_t)r->memory_mb, "env", strv_json(r->env, false), "setup", nullable(r->setup),
			      "install", nullable(r->install), "start", nullable(r->start), "exec",
			      strv_json(r->exec, true), "image_env", strv_json(r->image_env, false), "image_user",
			      nullable(r->image_user), "image_workdir", nullable(r->image_workdir));
	if (j == NULL)
		sbx_error_set(err, EINVAL, "worker record of %s: cannot build its JSON (out of memory, or a value that is not UTF-8)", r->worker);
	return j;
}

struct reader {
	json_t *j;
	const char *bad; /* the first key that did not fit */
};

static char *get_str(struct reader *rd, const char *key, bool nullable_ok)
{
	json_t *v = json_object_get(rd->j, key);
	if (nullable_ok && (v == NULL || json_is_null(v)))
		return NULL;
	char *s = json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v)
			  ? strdup(json_string_value(v))
			  : NULL;
	if (s == NULL && rd->bad == NULL)
		rd->bad = key;
	return s;
}

static char **get_strv(struct reader *rd, const char *key, bool nullable_ok)
{
	json_t *v = json_object_get(rd->j, key);
	if (nullable_ok && (v == NULL || json_is_null(v)))
		return NULL;
	size_t n = json_array_size(v);
	char **out = json_is_array(v) ? calloc(n + 1, sizeof(*out)) : NULL;
	for (size_t i = 0; out != NULL && i < n; i++) {
		json_t *e = json_array_get(v, i);
		if (!json_is_string(e) || strlen(json_string_value(e)) != json_string_length(e) ||
		    (out[i] = strdup(json_string_value(e))) == NULL) {
			sbx_strv_free(out);
			out = NULL;
		}
	}
	if (out == NULL && rd->bad == NULL)
		rd->bad = key;
	return out;
}

static unsigned get_uint(struct reader *rd, const char *key)
{
	json_t *v = json_object_get(rd->j, key);
	json_int_t n = json_integer_value(v);
	if (!json_is_integer(v) || n <= 0 || n > 1 << 20) {
		if (rd->bad == NULL)
			rd->bad = key;
		return 0;
	}
	return (unsigned)n;
}

int worker_record_from_json(json_t *j, struct worker_record *out, sbx_error_t *err)
{
	memset(out, 0, sizeof(*out));
	struct reader rd = { j, NULL };
	if (json_integer_value(json_object_get(j, "version")) != WORKER_RECORD_VERSION)
		return sbx_error_set(err, EINVAL, "not a version %d worker record", WORKER_RECORD_VERSION);
	const char *source = json_string_value(json_object_get(j, "source"));
	if (source != NULL && strcmp(source, "package") == 0)
		out->source = WORKER_SOURCE_PACKAGE;
	else if (source == NULL || strcmp(source, "path") != 0)
		rd.bad = "source";
	out->worker = get_str(&rd, "worker", false);
	out->host_path = get_str(&rd, "host_path", false);
	out->base_image = get_str(&rd, "base_image", false);
	out->image_erofs = get_str(&rd, "image_erofs", false);
	out->cpus = get_uint(&rd, "cpus");
	out->memory_mb = get_uint(&rd, "memory_mb");
	out->env = get_strv(&rd, "env", false);
	out->setup = get_str(&rd, "setup", true);
	out->install = get_str(&rd, "install", true);
	out->start = get_str(&rd, "start", true);
	out->exec = get_strv(&rd, "exec", true);
	out->image_env = get_strv(&rd, "image_env", false);
	out->image_user = get_str(&rd, "image_user", true);
	out->image_workdir = get_str(&rd, "image_workdir", true);
	if (rd.bad != NULL) {
		worker_record_free(out);
		return sbx_error_set(err, EINVAL, "key `%s` is missing or has the wrong type", rd.bad);
	}
	return 0;
}
