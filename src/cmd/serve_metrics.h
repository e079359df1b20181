/* The metrics endpoint of serve (metrics_listen) and of serve --front
 * (III_SANDBOX_METRICS_LISTEN): GET /metrics in the Prometheus text format,
 * on a libmicrohttpd thread of its own, so a scrape never waits on the
 * daemon's work nor the daemon on a scrape.  What a scrape reads and
 * renders is its caller's: each command exports its own families. */
#ifndef SBX_CMD_SERVE_METRICS_H
#define SBX_CMD_SERVE_METRICS_H

#include <stddef.h>

#include "adapter/config/config_metrics.h"
#include "common/error.h"
#include "common/metrics.h"

struct serve_metrics;

/* What a scrape does: collect(ctx) sets the gauges read at scrape time (on
 * the endpoint's thread: ctx must outlive serve_metrics_stop), then fams
 * are rendered, in order. */
struct serve_metrics_scrape {
	const char *setting; /* where the address came from, for errors: "metrics_listen" */
	void (*collect)(void *ctx);
	void *ctx;
	struct sbx_metric *const *fams;
	size_t nfams;
};

/* Binds `listen` (a unix socket is made mode 0600) and starts serving;
 * NULL with *err when the address cannot be bound. */
struct serve_metrics *serve_metrics_start(const struct sbx_metrics_listen *listen,
					  const struct serve_metrics_scrape *scrape, sbx_error_t *err);
/* Stops the thread, closes the socket and removes a unix socket's file. */
void serve_metrics_stop(struct serve_metrics *m);

#endif
