#include "front/front_metrics.h"

#include "common/metrics_families.h"
#include "front/front_internal.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static struct sbx_metric member_up = {
	.name = "sandbox_libkrun_front_member_up",
	.help = "1 while the member answers the front's refresh (adapter::info and list), 0 since it was last seen "
		"gone; one series per member namespace the front has known",
	.kind = SBX_METRIC_GAUGE,
	.labels = { "member" },
};

static struct sbx_metric forwarded = {
	.name = "sandbox_libkrun_front_forwarded_calls_total",
	.help = "Calls the front forwarded, by member and outcome: ok, error (the member's error answer) or "
		"unreachable (no answer: the member left the engine, or the front's own connection failed)",
	.kind = SBX_METRIC_COUNTER,
	.labels = { "member", "outcome" },
};

static struct sbx_metric full = {
	.name = "sandbox_libkrun_front_full_refusals_total",
	.help = "Placed calls refused with S400 because no member had room (each one tried was full or gone), by "
		"function",
	.kind = SBX_METRIC_COUNTER,
	.labels = { "function" },
};

static struct sbx_metric refreshes = {
	.name = "sandbox_libkrun_front_refreshes_total",
	.help = "Reads of the member table: the engine's namespaces, then every member's capacity and list",
	.kind = SBX_METRIC_COUNTER,
};

static struct sbx_metric refresh_failures = {
	.name = "sandbox_libkrun_front_refresh_failures_total",
	.help = "Refreshes that ended early because the engine did not answer the discovery",
	.kind = SBX_METRIC_COUNTER,
};

static struct sbx_metric *const families[] = {
	&member_up,       &forwarded,       &full, &refreshes, &refresh_failures, &sbx_m_engine_up,
	&sbx_m_engine_reconnects, &sbx_m_engine_queued,
};

void front_metrics_forwarded(const char *member, int fwd)
{
	static const char *const outcomes[] = { [FRONT_FWD_OK] = "ok",
						[FRONT_FWD_ERROR] = "error",
						[FRONT_FWD_UNREACHABLE] = "unreachable" };
	if (fwd < 0 || (size_t)fwd >= N(outcomes))
		return;
	const char *values[] = { member, outcomes[fwd] };
	sbx_metric_add(&forwarded, values, 1);
}

void front_metrics_full(const char *op)
{
	const char *values[] = { op };
	sbx_metric_add(&full, values, 1);
}

void front_metrics_refresh(int failed)
{
	sbx_metric_add(&refreshes, NULL, 1);
	if (failed)
		sbx_metric_add(&refresh_failures, NULL, 1);
}

void front_collect_metrics(void *front)
{
	struct front *f = front;
	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; i < f->nmembers; i++) {
		if (f->members[i].ns[0] == '\0')
			continue; /* a freed slot */
		const char *values[] = { f->members[i].ns };
		sbx_metric_set(&member_up, values, f->members[i].up ? 1 : 0);
	}
	pthread_mutex_unlock(&f->lock);
}

struct sbx_metric *const *front_metric_families(size_t *n)
{
	*n = N(families);
	return families;
}
