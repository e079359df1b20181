/* Outbound calls: engine_call() and the table of calls waiting for their
 * invocationresult.  The table lives under e->lock. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/clock.h"
#include "engine/engine_internal.h"

static void unlink_call(struct engine *e, struct pending_call *pc)
{
	for (struct pending_call **p = &e->pending; *p != NULL; p = &(*p)->next) {
		if (*p == pc) {
			*p = pc->next;
			return;
		}
	}
}

void engine_pending_complete(struct engine *e, json_t *msg)
{
	const char *idv = engine_json_str(msg, "invocation_id", 2 * SBX_UUID_STRLEN);
	char id[SBX_UUID_STRLEN + 1];
	if (idv == NULL || !sbx_uuid_parse(idv, id)) {
		sbx_warn("engine: invocationresult with an invalid invocation_id dropped");
		return;
	}
	json_t *error = json_object_get(msg, "error");
	json_t *result = json_object_get(msg, "result");

	pthread_mutex_lock(&e->lock);
	struct pending_call *pc = e->pending;
	while (pc != NULL && strcmp(pc->id, id) != 0)
		pc = pc->next;
	if (pc == NULL || pc->done) {
		pthread_mutex_unlock(&e->lock);
		/* No cancel exists in the protocol: late answers are normal. */
		sbx_debug("engine: result for unknown or finished call %s ignored", id);
		return;
	}
	if (error != NULL && !json_is_null(error)) {
		pc->error = json_is_object(error) ? json_incref(error)
						  : json_pack("{s:s, s:s}", "code", "invalid_error", "message",
							      "the callee answered with a malformed error");
	} else {
		pc->result = result != NULL ? json_incref(result) : json_null();
	}
	pc->done = true;
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
}

void engine_pending_fail_all(struct engine *e)
{
	for (struct pending_call *pc = e->pending; pc != NULL; pc = pc->next)
		if (!pc->done)
			pc->lost = true;
}

static json_t *call_message(const char *id, const struct engine_invocation *parent, const char *namespace,
			    const char *function_id, json_t *data)
{
	json_t *msg = json_pack("{s:s, s:s, s:s, s:O}", "type", "invokefunction", "invocation_id", id,
				"function_id", function_id, "data", data != NULL ? data : json_null());
	if (msg == NULL)
		return NULL;
	if (namespace != NULL && json_object_set_new(msg, "namespace", json_string(namespace)) < 0)
		goto fail;
	/* Verbatim trace context: the callee nests under the caller's trace. */
	if (parent != NULL && parent->traceparent != NULL &&
	    json_object_set_new(msg, "traceparent", json_string(parent->traceparent)) < 0)
		goto fail;
	if (parent != NULL && parent->baggage != NULL &&
	    json_object_set_new(msg, "baggage", json_string(parent->baggage)) < 0)
		goto fail;
	return msg;
fail:
	json_decref(msg);
	return NULL;
}

int engine_call(struct engine *e, const struct engine_invocation *parent, const char *function_id, json_t *data,
		int timeout_ms, json_t **result, json_t **error_body, sbx_error_t *err)
{
	return engine_call_in(e, parent, NULL, function_id, data, timeout_ms, result, error_body, err);
}

int engine_call_in(struct engine *e, const struct engine_invocation *parent, const char *namespace,
		   const char *function_id, json_t *data, int timeout_ms, json_t **result, json_t **error_body,
		   sbx_error_t *err)
{
	*result = NULL;
	*error_body = NULL;
	if (function_id == NULL || *function_id == '\0')
		return sbx_error_set(err, EINVAL, "engine_call needs a function id");
	struct pending_call pc = { 0 };
	if (sbx_uuid_v4(pc.id) < 0)
		return sbx_error_errno(err, errno, "generating an invocation id");
	json_t *msg = call_message(pc.id, parent, namespace, function_id, data);
	if (msg == NULL)
		return sbx_error_set(err, ENOMEM, "building the call to %s", function_id);

	int64_t deadline = sbx_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	pthread_mutex_lock(&e->lock);
	/* Calls made while reconnecting wait for the connection, within their
	 * own deadline. */
	while (!e->registered && !e->stopped && !e->fatal && sbx_ms_left(deadline) > 0)
		engine_wait_until(e, deadline);
	if (!e->registered) {
		bool stopped = e->stopped || e->fatal;
		pthread_mutex_unlock(&e->lock);
		json_decref(msg);
		if (stopped)
			return sbx_error_set(err, ECANCELED, "calling %s: the engine client is stopped", function_id);
		return sbx_error_set(err, ETIMEDOUT, "TIMEOUT: not connected to the engine within %d ms (calling %s)",
				     timeout_ms, function_id);
	}
	pc.next = e->pending;
	e->pending = &pc;
	pthread_mutex_unlock(&e->lock);

	int sent = engine_send(e, msg, err);
	json_decref(msg);

	pthread_mutex_lock(&e->lock);
	while (sent == 0 && !pc.done && !pc.lost && !e->stopped && sbx_ms_left(deadline) > 0)
		engine_wait_until(e, deadline);
	unlink_call(e, &pc);
	bool stopped = e->stopped;
	pthread_mutex_unlock(&e->lock);

	if (pc.done) {
		sbx_error_free(err);
		if (pc.error != NULL) {
			*error_body = pc.error;
			return 1;
		}
		*result = pc.result;
		return 0;
	}
	if (sent < 0)
		return sbx_error_prefix(err, "calling %s", function_id);
	if (pc.lost)
		return sbx_error_set(err, ECONNRESET, "calling %s: connection to the engine lost", function_id);
	if (stopped)
		return sbx_error_set(err, ECANCELED, "calling %s: the engine client is stopped", function_id);
	return sbx_error_set(err, ETIMEDOUT, "TIMEOUT: invocation of %s timed out after %d ms", function_id,
			     timeout_ms);
}
