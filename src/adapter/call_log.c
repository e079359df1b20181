#include "adapter/call_log.h"

#include <stdio.h>
#include <string.h>

#include "adapter/scode.h"
#include "common/cleanup_json.h"
#include "common/clock.h"
#include "common/log.h"

#define HANDLER_ERROR "handler error: "
#define DECODE_ERROR "serialization error: "

/* Copies a caller's string, cut at SBX_CALL_LOG_ID_MAX bytes. */
static void copy_bounded(char dst[SBX_CALL_LOG_ID_MAX + 4], const char *src)
{
	size_t n = strlen(src);
	if (n <= SBX_CALL_LOG_ID_MAX) {
		memcpy(dst, src, n + 1);
		return;
	}
	memcpy(dst, src, SBX_CALL_LOG_ID_MAX);
	memcpy(dst + SBX_CALL_LOG_ID_MAX, "...", 4);
}

/* The id a call names: its sandbox, else its worker (never its `auth`). */
static void take_id(struct sbx_call_log *c, json_t *obj)
{
	static const char *const keys[] = { "sandbox_id", "worker" };
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *v = json_string_value(json_object_get(obj, keys[i]));
		if (v != NULL) {
			c->id_key = keys[i];
			copy_bounded(c->id, v);
			return;
		}
	}
}

void sbx_call_log_start(struct sbx_call_log *c, const char *fn, json_t *req)
{
	*c = (struct sbx_call_log){ .start_ms = sbx_now_ms() };
	copy_bounded(c->fn, fn);
	if (json_is_object(req))
		take_id(c, req);
	struct sbx_log_field f[] = { SBX_LF_STR("fn", c->fn), SBX_LF_STR(c->id_key, c->id) };
	sbx_log_fields(SBX_LOG_DEBUG, f, c->id_key != NULL ? 2 : 1, "call started");
}

/* The S-code and cause of an error body: the envelope inside a handler
 * error, "decode" for a request that does not fit, else the body's code. */
static void outcome(json_t *out, char scode[64], const char **cause, json_t **envelope)
{
	const char *code = json_string_value(json_object_get(out, "code"));
	const char *msg = json_string_value(json_object_get(out, "message"));
	*cause = msg != NULL ? msg : "(no message)";
	snprintf(scode, 64, "%s", code != NULL ? code : "invocation_failed");
	if (msg == NULL)
		return;
	if (strncmp(msg, DECODE_ERROR, strlen(DECODE_ERROR)) == 0) {
		snprintf(scode, 64, "%s", SBX_SCODE_DECODE);
		*cause = msg + strlen(DECODE_ERROR);
		return;
	}
	if (strncmp(msg, HANDLER_ERROR, strlen(HANDLER_ERROR)) != 0)
		return;
	*envelope = json_loads(msg + strlen(HANDLER_ERROR), 0, NULL);
	const char *s = json_string_value(json_object_get(*envelope, "code"));
	const char *m = json_string_value(json_object_get(*envelope, "message"));
	if (s != NULL && m != NULL) {
		snprintf(scode, 64, "%s", s);
		*cause = m;
	}
}

void sbx_call_log_end(struct sbx_call_log *c, int rc, json_t *out)
{
	enum sbx_log_level level = rc == 0 ? SBX_LOG_DEBUG : SBX_LOG_INFO;
	if (level < sbx_log_get_level())
		return;
	/* create and run name their sandbox only in the reply. */
	if (c->id_key == NULL && rc == 0 && json_is_object(out))
		take_id(c, out);
	int64_t ms = sbx_now_ms() - c->start_ms;
	if (rc == 0) {
		struct sbx_log_field f[] = { SBX_LF_STR("fn", c->fn), SBX_LF_INT("duration_ms", ms),
					     SBX_LF_STR("outcome", "ok"), SBX_LF_STR(c->id_key, c->id) };
		sbx_log_fields(level, f, c->id_key != NULL ? 4 : 3, "call ended");
		return;
	}
	char scode[64];
	const char *cause;
	cleanup_json json_t *envelope = NULL;
	outcome(out, scode, &cause, &envelope);
	struct sbx_log_field f[] = { SBX_LF_STR("fn", c->fn),     SBX_LF_INT("duration_ms", ms),
				     SBX_LF_STR("outcome", scode), SBX_LF_STR("scode", scode),
				     SBX_LF_STR("cause", cause),   SBX_LF_STR(c->id_key, c->id) };
	sbx_log_fields(level, f, c->id_key != NULL ? 6 : 5, "call failed: %s %s", c->fn, scode);
}
