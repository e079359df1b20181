/* The front's metric families (docs/cluster.md), served on
 * III_SANDBOX_METRICS_LISTEN.  Every label is bounded: a member is one of
 * at most FRONT_MAX_MEMBERS namespaces (the table never drops a slot), an
 * outcome one of three, a function one of the three placed calls. */
#ifndef SBX_FRONT_METRICS_H
#define SBX_FRONT_METRICS_H

#include <stddef.h>

#include "common/metrics.h"

struct front;

/* A forwarded call's outcome: fwd is an enum front_fwd (front_internal.h). */
void front_metrics_forwarded(const char *member, int fwd);
/* A create, run or worker::prepare that every member refused as full. */
void front_metrics_full(const char *op);
/* One refresh of the member table; failed: the engine did not answer. */
void front_metrics_refresh(int failed);
/* Sets the per-member gauges from the table: a scrape's collect(). */
void front_collect_metrics(void *front);
/* The front's families and the engine connection's, in the order of the
 * exposition. */
struct sbx_metric *const *front_metric_families(size_t *n);

#endif
