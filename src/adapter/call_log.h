/* The log of each call through sbx_adapter_call: a debug line when it
 * starts, one when it ends (function, sandbox or worker id, duration,
 * outcome "ok"), and for a refusal or failure an info line instead, with
 * its S-code (or "decode", "function_not_found") and its cause.  Only ids
 * are read from the request: never tokens, env, code or contents. */
#ifndef SBX_ADAPTER_CALL_LOG_H
#define SBX_ADAPTER_CALL_LOG_H

#include <jansson.h>
#include <stdint.h>

/* Ids longer than this are cut (and end in "..."): they come from callers. */
#define SBX_CALL_LOG_ID_MAX 128

struct sbx_call_log {
	char fn[SBX_CALL_LOG_ID_MAX + 4];
	const char *id_key; /* "sandbox_id", "worker" or NULL */
	char id[SBX_CALL_LOG_ID_MAX + 4];
	int64_t start_ms;
};

void sbx_call_log_start(struct sbx_call_log *c, const char *fn, json_t *req);
/* `out` is the call's reply (rc 0) or its error body (rc < 0). */
void sbx_call_log_end(struct sbx_call_log *c, int rc, json_t *out);

#endif
