/* The gauges computed at scrape time from the adapter's state: live
 * sandboxes by image and state, the memory budget and what is committed;
 * and the published ports' connections, which the sandboxes' network
 * helpers count. */
#ifndef SBX_ADAPTER_ADAPTER_METRICS_H
#define SBX_ADAPTER_ADAPTER_METRICS_H

#include "adapter/adapter_state.h"

void sbx_adapter_collect_metrics(struct sbx_adapter *a);
/* Adds what vm's published ports accepted and refused since the last call
 * to sandbox_libkrun_published_connections_total (scrape, and teardown
 * before the VM stops). */
void sbx_adapter_count_published(struct sbx_adapter *a, void *vm);

#endif
