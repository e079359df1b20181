/* The metrics of one call through the front door (sbx_adapter_call): its
 * count by function and outcome, its duration, its S-code. */
#ifndef SBX_ADAPTER_CALL_METRICS_H
#define SBX_ADAPTER_CALL_METRICS_H

#include <jansson.h>
#include <stdint.h>

/* The monotonic clock in nanoseconds, taken when a call starts. */
int64_t sbx_call_metrics_start(void);
/* `op` is the table's own name of the function (a bounded set); `out` the
 * reply or error body sbx_adapter_call returns. */
void sbx_call_metrics_record(const char *op, int rc, const json_t *out, int64_t start_ns);

#endif
