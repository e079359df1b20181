/* serve's metrics endpoint (metrics_listen): GET /metrics in the Prometheus
 * text format, on a libmicrohttpd thread of its own, so a scrape never
 * waits on the daemon's work nor the daemon on a scrape. */
#ifndef SBX_CMD_SERVE_METRICS_H
#define SBX_CMD_SERVE_METRICS_H

#include "adapter/adapter_state.h"
#include "adapter/config/config_metrics.h"
#include "common/error.h"
#include "engine/engine.h"
#include "worker/worker_table.h"

struct serve_metrics;

/* What a scrape reads its gauges from. */
struct serve_metrics_sources {
	struct sbx_adapter *adapter;
	void *backend; /* vm_backend's */
	struct engine *engine;
	struct worker_table *workers;
};

/* Binds `listen` (a unix socket is made mode 0600) and starts serving;
 * NULL with *err when the address cannot be bound. */
struct serve_metrics *serve_metrics_start(const struct sbx_metrics_listen *listen,
					  const struct serve_metrics_sources *from, sbx_error_t *err);
/* Stops the thread, closes the socket and removes a unix socket's file. */
void serve_metrics_stop(struct serve_metrics *m);

#endif
