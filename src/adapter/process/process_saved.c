/* A background process in a paused sandbox's record (process_saved.h). */
#include "adapter/process/process_saved.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/request.h"
#include "common/base64.h"
#include "common/cleanup.h"
#include "common/scodes.h"
#include "common/uuid.h"

/* What one argv may hold in a record: a command line is bounded far
 * below this by the engine's frame. */
#define SAVED_ARGV_MAX 4096
#define SAVED_ARG_MAX (1u << 20)

static json_t *ring_saved(const struct proc_ring *r)
{
	uint64_t start = proc_ring_start(r);
	size_t len = (size_t)(r->end - start);
	cleanup_free uint8_t *data = malloc(len > 0 ? len : 1);
	if (data == NULL)
		return NULL;
	size_t got = proc_ring_copy(r, start, data, len);
	sbx_error_t err = NULL;
	cleanup_free char *b64 = sbx_base64_encode(data, got, &err);
	sbx_error_free(&err);
	if (b64 == NULL)
		return NULL;
	return json_pack("{s:I, s:s}", "end", (json_int_t)r->end, "data", b64);
}

json_t *bg_proc_saved(struct bg_proc *p)
{
	pthread_mutex_lock(&p->lock);
	json_t *o = json_pack("{s:s, s:O, s:I, s:I, s:I, s:b, s:o*, s:o*}", "process_id", p->id, "argv", p->argv, "pid",
			      (json_int_t)p->pid, "started_ms", (json_int_t)p->started_ms, "ended_ms",
			      (json_int_t)p->ended_ms, "running", p->running, "stdout", ring_saved(&p->out), "stderr",
			      ring_saved(&p->err));
	if (o != NULL && !p->running && p->has_code)
		json_object_set_new(o, "exit_code", json_integer(p->exit_code));
	pthread_mutex_unlock(&p->lock);
	if (o != NULL && (json_object_get(o, "stdout") == NULL || json_object_get(o, "stderr") == NULL)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static int bad(sbx_error_t *err, const char *what)
{
	return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "saved background process: %s", what);
}

static int check_argv(json_t *argv, sbx_error_t *err)
{
	if (!json_is_array(argv) || json_array_size(argv) == 0 || json_array_size(argv) > SAVED_ARGV_MAX)
		return bad(err, "argv is not a command");
	size_t i;
	json_t *v;
	json_array_foreach(argv, i, v) {
		if (!json_is_string(v) || json_string_length(v) > SAVED_ARG_MAX)
			return bad(err, "argv is not a command");
	}
	return 0;
}

/* The log's bytes back into the ring at their offsets: `end` bytes
 * written in all, the newest of them in data. */
static int ring_load(struct proc_ring *r, json_t *rec, sbx_error_t *err)
{
	json_t *end = json_object_get(rec, "end"), *data = json_object_get(rec, "data");
	if (!json_is_integer(end) || json_integer_value(end) < 0 || !json_is_string(data))
		return bad(err, "a log is not one");
	sbx_error_t berr = NULL;
	size_t len = 0;
	cleanup_free uint8_t *bytes = NULL;
	if (json_string_length(data) > 0 &&
	    (bytes = sbx_base64_decode(json_string_value(data), json_string_length(data), &len, &berr)) == NULL) {
		sbx_error_free(&berr);
		return bad(err, "a log's data is not base64");
	}
	uint64_t total = (uint64_t)json_integer_value(end);
	if (len > total)
		return bad(err, "a log holds more than was written");
	/* A smaller background_log_bytes now: the newest bytes stay. */
	size_t keep = len > r->max ? r->max : len;
	r->end = total - keep;
	if (keep > 0)
		proc_ring_append(r, bytes + (len - keep), keep);
	return 0;
}

struct bg_proc *bg_proc_from_saved(json_t *rec, size_t log_bytes, struct sbx_mem_budget *mem, sbx_error_t *err)
{
	json_t *id = json_object_get(rec, "process_id"), *argv = json_object_get(rec, "argv");
	json_t *code = json_object_get(rec, "exit_code");
	char canon[SBX_UUID_STRLEN + 1];
	if (!json_is_object(rec) || !json_is_string(id) || !sbx_uuid_parse(json_string_value(id), canon))
		return bad(err, "no process_id"), NULL;
	if (check_argv(argv, err) < 0)
		return NULL;
	if (!req_int_in(json_object_get(rec, "pid"), 0, UINT32_MAX) ||
	    !req_int_in(json_object_get(rec, "started_ms"), 0, INT64_MAX) ||
	    !req_int_in(json_object_get(rec, "ended_ms"), 0, INT64_MAX) || !json_is_boolean(json_object_get(rec, "running")) ||
	    (code != NULL && !req_int_in(code, -1, 255)))
		return bad(err, "pid, clocks or exit are not numbers"), NULL;
	struct bg_proc *p = bg_proc_new(argv, log_bytes, mem, err);
	if (p == NULL)
		return NULL;
	memcpy(p->id, canon, sizeof(p->id));
	p->pid = (uint32_t)json_integer_value(json_object_get(rec, "pid"));
	p->started_ms = json_integer_value(json_object_get(rec, "started_ms"));
	p->ended_ms = json_integer_value(json_object_get(rec, "ended_ms"));
	p->running = json_is_true(json_object_get(rec, "running"));
	p->has_code = !p->running && code != NULL;
	p->exit_code = p->has_code ? (int)json_integer_value(code) : 0;
	if (ring_load(&p->out, json_object_get(rec, "stdout"), err) < 0 ||
	    ring_load(&p->err, json_object_get(rec, "stderr"), err) < 0) {
		bg_proc_unref(p);
		return NULL;
	}
	return p;
}
