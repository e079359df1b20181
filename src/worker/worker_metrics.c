#include "worker/worker_metrics.h"

#include "common/metrics_families.h"

void worker_collect_metrics(struct worker_table *t)
{
	unsigned count[WORKER_FAILED + 1] = { 0 };
	pthread_mutex_lock(&t->lock);
	for (const struct worker_live *w = t->head; w != NULL; w = w->next) {
		if ((unsigned)w->state <= WORKER_FAILED)
			count[w->state]++;
	}
	pthread_mutex_unlock(&t->lock);
	/* Every state has its series, at 0 when no worker is in it. */
	for (unsigned s = WORKER_PREPARED; s <= WORKER_FAILED; s++)
		sbx_metric_set(&sbx_m_workers, (const char *[]){ worker_state_name((enum worker_state)s) }, count[s]);
}
