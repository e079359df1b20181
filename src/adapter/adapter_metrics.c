#include "adapter/adapter_metrics.h"

#include <jansson.h>
#include <string.h>

#include "adapter/mem_budget.h"
#include "adapter/sandbox_registry.h"
#include "adapter/snapshot/snapshot_store.h"
#include "common/metrics_families.h"

#define MIB 1048576.0

/* Images are catalog names (create admits no other), states the
 * registry's own (the operator's "running" is "ready" here, as a create
 * ends): bounded label sets.  Creates in progress count too. */
static void collect_sandboxes(struct sbx_adapter *a)
{
	json_t *rows = sbx_registry_rows(a->reg, NULL, NULL);
	sbx_metric_zero(&sbx_m_sandboxes);
	size_t i;
	json_t *sb;
	json_array_foreach(rows, i, sb) {
		const char *image = json_string_value(json_object_get(sb, "image"));
		const char *state = json_string_value(json_object_get(sb, "state"));
		if (image != NULL && state != NULL)
			sbx_metric_add(&sbx_m_sandboxes,
				       (const char *[]){ image, strcmp(state, "running") == 0 ? "ready" : state }, 1);
	}
	json_decref(rows);
}

static void collect_memory(struct sbx_mem_budget *b)
{
	uint64_t committed, limit;
	sbx_mem_budget_read(b, &committed, &limit);
	sbx_metric_set(&sbx_m_memory_committed, NULL, (double)committed * MIB);
	sbx_metric_set(&sbx_m_memory_budget, NULL, (double)limit * MIB);
}

static void published(void *vm, json_t *row, void *ud)
{
	sbx_adapter_count_published(ud, vm);
}

void sbx_adapter_count_published(struct sbx_adapter *a, void *vm)
{
	const struct sbx_backend_ops *ops = a->backend.ops;
	uint64_t d[2] = { 0, 0 };
	if (vm == NULL || ops == NULL || ops->publish_take == NULL)
		return;
	ops->publish_take(vm, d);
	if (d[0] > 0)
		sbx_metric_add(&sbx_m_published_connections, (const char *[]){ "accepted" }, (double)d[0]);
	if (d[1] > 0)
		sbx_metric_add(&sbx_m_published_connections, (const char *[]){ "refused" }, (double)d[1]);
}

/* What snapshot_store_mb bounds: snapshots' records read from disk (a
 * few hundred bytes each), paused sandboxes' from the registry. */
static void collect_store(struct sbx_adapter *a)
{
	uint64_t paused = 0;
	sbx_registry_paused(a->reg, &paused);
	sbx_metric_set(&sbx_m_stored_bytes, (const char *[]){ "snapshots" }, (double)snapshot_store_bytes());
	sbx_metric_set(&sbx_m_stored_bytes, (const char *[]){ "paused" }, (double)paused);
}

void sbx_adapter_collect_metrics(struct sbx_adapter *a)
{
	json_decref(sbx_registry_rows(a->reg, published, a));
	collect_sandboxes(a);
	collect_memory(&a->mem);
	collect_store(a);
}
