#include "engine/engine_metrics.h"

#include "common/metrics_families.h"
#include "engine/engine_internal.h"

void engine_collect_metrics(struct engine *e)
{
	pthread_mutex_lock(&e->lock);
	bool up = e->registered;
	int queued = e->queued;
	pthread_mutex_unlock(&e->lock);
	sbx_metric_set(&sbx_m_engine_up, NULL, up ? 1 : 0);
	sbx_metric_set(&sbx_m_engine_queued, NULL, queued);
}
