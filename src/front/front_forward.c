/* One call, forwarded to one member in its namespace.  A member's answer,
 * result or error, goes back to the caller as it came: the member speaks
 * the contract.  Only the engine's own refusals (the member's functions
 * are gone, its connection ended during the call) become the front's S300. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "adapter/adapter.h"
#include "adapter/scode.h"
#include "common/cleanup.h"
#include "common/cleanup_json.h"
#include "common/log.h"
#include "common/scodes.h"
#include "front/front_internal.h"
#include "front/front_metrics.h"

#define HANDLER_PREFIX "handler error: "

int front_fail(const char *scode, json_t **out, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sbx_error_t err = NULL;
	/* Messages name namespaces and ids, all bounded: a cut one still ends
	 * visibly. */
	if (n >= (int)sizeof(msg))
		memcpy(msg + sizeof(msg) - 4, "...", 4);
	sbx_error_scode(&err, scode, "%s", msg);
	return sbx_op_fail(&err, out);
}

/* A member's error body is {code: invocation_failed, message: "handler
 * error: " + the envelope's JSON}. */
json_t *front_envelope(json_t *body)
{
	const char *msg = json_string_value(json_object_get(body, "message"));
	if (msg == NULL || strncmp(msg, HANDLER_PREFIX, strlen(HANDLER_PREFIX)) != 0)
		return NULL;
	json_t *env = json_loads(msg + strlen(HANDLER_PREFIX), 0, NULL);
	if (!json_is_object(env))
		json_decref(env), env = NULL;
	return env;
}

static void body_scode(json_t *body, char scode[8])
{
	scode[0] = '\0';
	cleanup_json json_t *env = front_envelope(body);
	const char *code = json_string_value(json_object_get(env, "code"));
	if (code != NULL && strlen(code) < 8)
		memcpy(scode, code, strlen(code) + 1);
}

/* The engine's answers that mean the member is not there (iii-protocol.md
 * §2.7 and §5): its functions left, or its connection ended mid-call. */
static bool engine_refusal(json_t *body)
{
	const char *code = json_string_value(json_object_get(body, "code"));
	return code != NULL && (strcmp(code, "function_not_found") == 0 || strcmp(code, "invocation_stopped") == 0);
}

enum front_fwd front_forward(struct front *f, const struct engine_invocation *inv, size_t member, const char *op,
			     json_t *data, int timeout_ms, json_t **out, char scode[8])
{
	char fn[160];
	snprintf(fn, sizeof(fn), "%s::%s", SBX_WORKER_NAME, op);
	char ns[FRONT_NS_MAX + 1];
	pthread_mutex_lock(&f->lock);
	memcpy(ns, f->members[member].ns, sizeof(ns));
	pthread_mutex_unlock(&f->lock);
	json_t *res = NULL, *ebody = NULL;
	sbx_error_t err = NULL;
	scode[0] = '\0';
	int rc = engine_call_in(f->e, inv, ns, fn, data, timeout_ms, &res, &ebody, &err);
	if (rc == 0) {
		front_metrics_forwarded(ns, FRONT_FWD_OK);
		*out = res;
		return FRONT_FWD_OK;
	}
	if (rc == 1 && !engine_refusal(ebody)) {
		front_metrics_forwarded(ns, FRONT_FWD_ERROR);
		body_scode(ebody, scode);
		*out = ebody;
		return FRONT_FWD_ERROR;
	}
	front_metrics_forwarded(ns, FRONT_FWD_UNREACHABLE);
	cleanup_free char *why = NULL;
	if (rc == 1) {
		const char *m = json_string_value(json_object_get(ebody, "message"));
		why = strdup(m != NULL ? m : "the engine refused the call");
	} else {
		why = strdup(sbx_error_msg(err));
	}
	json_decref(ebody);
	sbx_error_free(&err);
	/* Only the engine's word says the member left; a failure of our own
	 * connection says nothing about it. */
	if (rc == 1)
		front_member_lost(f, member);
	memcpy(scode, SBX_S_VM_BOOT, sizeof(SBX_S_VM_BOOT));
	front_fail(SBX_S_VM_BOOT, out, "member %s did not answer %s: %.300s", ns, fn,
		   why != NULL ? why : "out of memory");
	return FRONT_FWD_UNREACHABLE;
}
