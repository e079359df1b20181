/* The gauges computed at scrape time from the adapter's state: live
 * sandboxes by image and state, the memory budget and what is committed. */
#ifndef SBX_ADAPTER_ADAPTER_METRICS_H
#define SBX_ADAPTER_ADAPTER_METRICS_H

#include "adapter/adapter_state.h"

void sbx_adapter_collect_metrics(struct sbx_adapter *a);

#endif
