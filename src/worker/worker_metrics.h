/* The Compose workers' gauge, counted at scrape time: workers by state. */
#ifndef SBX_WORKER_WORKER_METRICS_H
#define SBX_WORKER_WORKER_METRICS_H

#include "worker/worker_table.h"

void worker_collect_metrics(struct worker_table *t);

#endif
