#include "adapter/call_metrics.h"

#include <string.h>
#include <time.h>

#include "adapter/scode.h"
#include "common/metrics_families.h"

#define HANDLER_ERROR "handler error: "

/* The S-code of an error body: its message is "handler error: " and the
 * envelope (scode.c).  A code outside the contract's table, or a body of
 * another shape (a request that did not decode), is "other", so the label
 * stays within a bounded set. */
static const char *outcome_of(const json_t *out)
{
	const char *msg = json_string_value(json_object_get(out, "message"));
	if (msg == NULL || strncmp(msg, HANDLER_ERROR, strlen(HANDLER_ERROR)) != 0)
		return "other";
	json_t *env = json_loads(msg + strlen(HANDLER_ERROR), 0, NULL);
	const char *code = json_string_value(json_object_get(env, "code"));
	const struct sbx_scode *sc = code != NULL ? sbx_scode_find(code) : NULL;
	json_decref(env);
	return sc != NULL ? sc->code : "other";
}

int64_t sbx_call_metrics_start(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void sbx_call_metrics_record(const char *op, int rc, const json_t *out, int64_t start_ns)
{
	const char *outcome = rc == 0 ? "ok" : outcome_of(out);
	sbx_metric_add(&sbx_m_calls, (const char *[]){ op, outcome }, 1);
	sbx_metric_observe(&sbx_m_call_seconds, (const char *[]){ op },
			    (double)(sbx_call_metrics_start() - start_ns) / 1e9);
	if (rc != 0)
		sbx_metric_add(&sbx_m_errors, (const char *[]){ outcome }, 1);
}
