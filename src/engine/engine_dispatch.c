/* Incoming invokefunction: each call runs its handler on a thread of its
 * function's pool (max_concurrent_invocations threads, or the small pool
 * of quick functions), and gets exactly one invocationresult when it
 * carries an invocation_id.  Past a pool's threads, calls wait in FIFO
 * order and a finishing thread takes the next one; only a full queue
 * (max_queued_invocations) refuses a call.  The reader never blocks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/scodes.h"
#include "engine/engine_internal.h"

#define TRACE_FIELD_MAX 4096 /* traceparent is 55 bytes; baggage is small */

struct job {
	struct job *next; /* in its pool's queue */
	struct engine *e;
	const struct engine_function *fn;
	bool has_id;
	char invocation_id[SBX_UUID_STRLEN + 1];
	json_t *function_id; /* echoed verbatim, NUL bytes included */
	char *traceparent;
	char *baggage;
	json_t *data;
};

static void job_free(struct job *j)
{
	json_decref(j->function_id);
	free(j->traceparent);
	free(j->baggage);
	json_decref(j->data);
	free(j);
}

/* An error body the engine can decode: it drops a frame whose error lacks a
 * string code or message, and the caller would then wait forever. */
static json_t *valid_error(json_t *out)
{
	json_t *code = json_object_get(out, "code");
	json_t *message = json_object_get(out, "message");
	json_t *stack = json_object_get(out, "stacktrace");
	if (json_is_string(code) && json_is_string(message)) {
		json_t *body = json_pack("{s:O, s:O}", "code", code, "message", message);
		if (body != NULL && json_is_string(stack))
			json_object_set(body, "stacktrace", stack);
		return body;
	}
	return json_pack("{s:s, s:s}", "code", "invocation_failed", "message", "the handler failed without an error body");
}

/* Sends the one invocationresult of an invocation; `out` is stolen. */
static void send_result(struct engine *e, const struct job *j, bool ok, json_t *out)
{
	json_t *msg = json_pack("{s:s, s:s, s:O}", "type", "invocationresult", "invocation_id", j->invocation_id,
				"function_id", j->function_id);
	if (msg == NULL) {
		json_decref(out);
		sbx_err("engine: out of memory answering %s", j->invocation_id);
		return;
	}
	if (j->traceparent != NULL)
		json_object_set_new(msg, "traceparent", json_string(j->traceparent));
	if (j->baggage != NULL)
		json_object_set_new(msg, "baggage", json_string(j->baggage));
	if (ok)
		json_object_set_new(msg, "result", out != NULL ? out : json_null());
	else
		json_object_set_new(msg, "error", valid_error(out));
	if (!ok)
		json_decref(out);

	sbx_error_t err = NULL;
	if (engine_send(e, msg, &err) < 0 && (err->errnum == EMSGSIZE || err->errnum == EINVAL)) {
		/* The result itself cannot travel; the caller still gets an answer. */
		json_object_del(msg, "result");
		json_object_set_new(msg, "error", json_pack("{s:s, s:s}", "code", "invalid_result", "message",
							    "the result could not be sent (too large or not JSON)"));
		sbx_error_free(&err);
		engine_send(e, msg, &err);
	}
	if (err != NULL)
		sbx_warn("engine: result of %s (%s) not sent: %s", j->invocation_id, json_string_value(j->function_id),
			 sbx_error_msg(err));
	sbx_error_free(&err);
	json_decref(msg);
}

static void run_job(struct job *j)
{
	struct engine *e = j->e;
	struct engine_invocation inv = {
		.invocation_id = j->has_id ? j->invocation_id : NULL,
		.function_id = json_string_value(j->function_id),
		.traceparent = j->traceparent,
		.baggage = j->baggage,
		.engine = e,
	};
	json_t *out = NULL;
	int r = j->fn->handler(j->fn->userdata, &inv, j->data, &out);
	if (j->has_id)
		send_result(e, j, r == 0, out);
	else
		json_decref(out);
	job_free(j);
}

/* The next waiting job of the pool, or NULL; e->lock held.  A stopping
 * engine runs no more handlers. */
static struct job *next_job(struct engine *e, struct invocation_pool *pool)
{
	struct job *j = pool->head;
	if (j == NULL)
		return NULL;
	pool->head = j->next;
	if (pool->head == NULL)
		pool->tail = NULL;
	e->queued--;
	return j;
}

static void *invocation_thread(void *arg)
{
	struct job *j = arg;
	struct engine *e = j->e;
	struct invocation_pool *pool = &e->pools[j->fn->quick];
	while (j != NULL) {
		if (engine_stopping(e))
			job_free(j);
		else
			run_job(j);
		pthread_mutex_lock(&e->lock);
		j = next_job(e, pool);
		if (j == NULL)
			pool->busy--;
		pthread_mutex_unlock(&e->lock);
	}
	engine_thread_done(e);
	return NULL;
}

void engine_dispatch_drop_queued(struct engine *e)
{
	for (size_t i = 0; i < sizeof(e->pools) / sizeof(e->pools[0]); i++) {
		struct job *j;
		while ((j = next_job(e, &e->pools[i])) != NULL)
			job_free(j);
	}
}

static void reply_error(struct engine *e, const struct job *j, const char *code, const char *message)
{
	if (j->has_id)
		send_result(e, j, false, json_pack("{s:s, s:s}", "code", code, "message", message));
}

static char *dup_trace(json_t *msg, const char *key)
{
	const char *v = engine_json_str(msg, key, TRACE_FIELD_MAX);
	return v != NULL ? strdup(v) : NULL;
}

/* The job of an invokefunction, or NULL when it cannot be answered: no
 * function_id string, an unusable invocation_id, no memory. */
static struct job *job_new(struct engine *e, json_t *msg)
{
	json_t *fid = json_object_get(msg, "function_id");
	if (!json_is_string(fid) || json_string_length(fid) > ENGINE_MAX_ID_LEN) {
		sbx_warn("engine: invokefunction without a usable function_id dropped");
		return NULL;
	}
	struct job *j = calloc(1, sizeof(*j));
	if (j == NULL) {
		sbx_err("engine: out of memory; an invocation dropped");
		return NULL;
	}
	json_t *idv = json_object_get(msg, "invocation_id");
	if (idv != NULL && !json_is_null(idv)) {
		const char *id = engine_json_str(msg, "invocation_id", 2 * SBX_UUID_STRLEN);
		if (id == NULL || !sbx_uuid_parse(id, j->invocation_id)) {
			sbx_warn("engine: invokefunction with an invalid invocation_id dropped");
			free(j);
			return NULL;
		}
		j->has_id = true;
	}
	j->e = e;
	j->function_id = json_incref(fid);
	j->traceparent = dup_trace(msg, "traceparent");
	j->baggage = dup_trace(msg, "baggage");
	json_t *data = json_object_get(msg, "data");
	j->data = data != NULL ? json_incref(data) : json_null();
	return j;
}

/* A call refused before any handler runs: its function, code and cause
 * as fields. */
static void log_refusal(enum sbx_log_level level, const char *fn, const char *code, const char *cause)
{
	struct sbx_log_field f[] = { SBX_LF_STR("fn", fn),	   SBX_LF_STR("outcome", code),
				     SBX_LF_STR("scode", code),	   SBX_LF_STR("cause", cause) };
	sbx_log_kv(level, f, "engine: call refused: %s", code);
}

void engine_dispatch_refuse(struct engine *e, json_t *msg, const char *code, const char *message)
{
	struct job *j = job_new(e, msg);
	if (j == NULL)
		return;
	log_refusal(SBX_LOG_INFO, json_string_value(j->function_id), code, message);
	reply_error(e, j, code, message);
	job_free(j);
}

int engine_thread_start(void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_t t;
	int r = pthread_create(&t, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	return r;
}

void engine_thread_done(struct engine *e)
{
	pthread_mutex_lock(&e->lock);
	e->running--;
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
}

void engine_dispatch_invocation(struct engine *e, json_t *msg)
{
	struct job *j = job_new(e, msg);
	if (j == NULL)
		return;
	/* NULL for a function_id with a NUL byte: no function has one. */
	const char *fid = engine_json_str(msg, "function_id", ENGINE_MAX_ID_LEN);

	pthread_mutex_lock(&e->lock);
	for (size_t i = 0; fid != NULL && i < e->nfns && j->fn == NULL; i++)
		if (strcmp(e->fns[i]->id, fid) == 0)
			j->fn = e->fns[i];
	enum { RUN, QUEUED, FULL } fate = RUN;
	struct invocation_pool *pool = j->fn != NULL ? &e->pools[j->fn->quick] : NULL;
	if (pool != NULL && pool->busy >= pool->max) {
		fate = e->queued >= e->max_queued ? FULL : QUEUED;
		if (fate == QUEUED) {
			if (pool->tail != NULL)
				pool->tail->next = j;
			else
				pool->head = j;
			pool->tail = j;
			e->queued++;
		}
	} else if (pool != NULL) {
		pool->busy++;
		e->running++;
	}
	int queued = e->queued;
	pthread_mutex_unlock(&e->lock);

	if (j->fn == NULL) {
		char text[ENGINE_MAX_ID_LEN + 64];
		snprintf(text, sizeof(text), "Function %s not found", fid != NULL ? fid : "(with a NUL byte)");
		log_refusal(SBX_LOG_INFO, fid != NULL ? fid : "(with a NUL byte)", "function_not_found", text);
		reply_error(e, j, "function_not_found", text);
		job_free(j);
		return;
	}
	if (fate == QUEUED)
		return;
	if (fate == FULL) {
		char text[256];
		snprintf(text, sizeof(text),
			 "the worker is at its invocation limit: %d running and %d waiting (max_concurrent_invocations "
			 "%d, max_queued_invocations %d)",
			 pool->max, queued, pool->max, e->max_queued);
		bool busy = e->busy_error != NULL && j->has_id;
		log_refusal(SBX_LOG_WARN, fid, busy ? SBX_S_LIMIT : "too_many_invocations", text);
		if (busy)
			send_result(e, j, false, e->busy_error(text));
		else
			reply_error(e, j, "too_many_invocations", text);
		job_free(j);
		return;
	}

	int r = engine_thread_start(invocation_thread, j);
	if (r != 0) {
		sbx_err("engine: cannot start a thread for %s: %s", fid, strerror(r));
		reply_error(e, j, "invocation_failed", "the worker could not start the handler");
		job_free(j);
		pthread_mutex_lock(&e->lock);
		pool->busy--;
		pthread_mutex_unlock(&e->lock);
		engine_thread_done(e);
	}
}
