/* A small metrics registry rendered in the Prometheus text exposition
 * format (0.0.4) at scrape time.  A family (struct sbx_metric) is a static
 * definition; its series appear on first use, one per set of label values.
 * Label values must come from bounded sets (function names, S-codes, boot
 * modes, catalog images): past SBX_METRIC_MAX_SERIES series, or for a value
 * longer than SBX_METRIC_MAX_VALUE_LEN, an update is dropped and counted in
 * sandbox_libkrun_metrics_dropped_total.  One lock guards every family:
 * updates are a lookup among a few series and never block on I/O. */
#ifndef SBX_COMMON_METRICS_H
#define SBX_COMMON_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define SBX_METRIC_MAX_LABELS 2
#define SBX_METRIC_MAX_SERIES 256
#define SBX_METRIC_MAX_VALUE_LEN 128

enum sbx_metric_kind { SBX_METRIC_COUNTER, SBX_METRIC_GAUGE, SBX_METRIC_HISTOGRAM };

struct sbx_metric_series;

struct sbx_metric {
	const char *name;
	const char *help;
	enum sbx_metric_kind kind;
	const char *labels[SBX_METRIC_MAX_LABELS + 1]; /* label names, NULL-terminated */
	const double *buckets; /* histogram: ascending upper bounds; +Inf is implied */
	size_t nbuckets;
	/* Under the registry's lock. */
	struct sbx_metric_series *series;
	size_t nseries;
};

/* `values` holds one value per label name (NULL for a family without
 * labels).  add: a counter (v >= 0) or a gauge; set: a gauge; observe: a
 * histogram. */
void sbx_metric_add(struct sbx_metric *m, const char *const *values, double v);
void sbx_metric_set(struct sbx_metric *m, const char *const *values, double v);
void sbx_metric_observe(struct sbx_metric *m, const char *const *values, double v);
/* Sets every series of a gauge to 0: a gauge recomputed at each scrape
 * keeps the series it had (at 0) when what it counted is gone. */
void sbx_metric_zero(struct sbx_metric *m);

/* The text of `fams` (and of the dropped-updates counter) in the
 * exposition format; *len is its length.  Free with free(). */
char *sbx_metrics_render(struct sbx_metric *const *fams, size_t n, size_t *len, sbx_error_t *err);

#endif
