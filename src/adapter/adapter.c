#include "adapter/adapter.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/process/process_follow.h"
#include "adapter/process/process_table.h"
#include "adapter/reaper.h"
#include "adapter/terminal/terminal.h"
#include "common/log.h"

/* memory_budget_mb, else MemTotal less the host's reserve. */
static uint64_t memory_budget(const struct sbx_config *cfg)
{
	if (cfg->memory_budget_mb > 0)
		return cfg->memory_budget_mb;
	uint64_t total;
	sbx_error_t err = NULL;
	if (sbx_host_memtotal_mib("/proc/meminfo", &total, &err) < 0) {
		sbx_warn("memory budget: %s; admitting sandboxes by count only (set memory_budget_mb)",
			 sbx_error_msg(err));
		sbx_error_free(&err);
		return UINT64_MAX;
	}
	return sbx_mem_default_budget_mib(total);
}

/* Says at start when the configured limits promise more than fits. */
static void check_capacity(const struct sbx_adapter *a)
{
	const struct sbx_config *cfg = a->cfg;
	uint64_t per = sbx_config_vm_cost_mib(cfg, cfg->default_memory_mb, cfg->default_cpus);
	uint64_t limit = a->mem.limit_mib;
	if (limit == UINT64_MAX)
		return;
	sbx_info("memory budget %" PRIu64 " MiB: %" PRIu64 " sandboxes of default_memory_mb %u (%" PRIu64
		 " MiB each with their VM)",
		 limit, limit / per, cfg->default_memory_mb, per);
	if ((uint64_t)cfg->max_concurrent_sandboxes * per > limit)
		sbx_warn("max_concurrent_sandboxes %u x %" PRIu64 " MiB (default_memory_mb %u + its VM) does not fit "
			 "memory_budget_mb %" PRIu64 ": creates past %" PRIu64 " such sandboxes fail with S400",
			 cfg->max_concurrent_sandboxes, per, cfg->default_memory_mb, limit, limit / per);
}

struct sbx_adapter *sbx_adapter_new(struct sbx_config *cfg, sbx_error_t *err)
{
	struct sbx_adapter *a = calloc(1, sizeof(*a));
	if (a == NULL) {
		sbx_config_free(cfg);
		return sbx_error_errno(err, ENOMEM, "adapter"), NULL;
	}
	a->cfg = cfg;
	sbx_mem_budget_init(&a->mem, memory_budget(cfg));
	a->reg = sbx_registry_new(err);
	a->procs = a->reg != NULL ? process_table_new(err) : NULL;
	a->follows = a->procs != NULL ? follows_new(err) : NULL;
	if (a->follows != NULL && (a->terminals = sbx_terminals_new(err)) == NULL) {
		sbx_adapter_free(a);
		return NULL;
	}
	const char *token = getenv("III_SANDBOX_WORKER_TOKEN");
	if (token != NULL && token[0] != '\0')
		a->worker_token = strdup(token);
	if (a->follows == NULL || (token != NULL && token[0] != '\0' && a->worker_token == NULL)) {
		if (a->follows != NULL)
			sbx_error_errno(err, ENOMEM, "adapter");
		sbx_adapter_free(a);
		return NULL;
	}
	return a;
}

void sbx_adapter_free(struct sbx_adapter *a)
{
	if (a == NULL)
		return;
	reaper_stop(&a->reaper);
	if (a->reg != NULL) {
		unsigned n = reaper_scan(a, true);
		if (n > 0)
			sbx_info("stopped %u sandbox%s", n, n == 1 ? "" : "es");
	}
	if (a->worker_token != NULL) {
		explicit_bzero(a->worker_token, strlen(a->worker_token));
		free(a->worker_token);
	}
	process_table_free(a->procs);
	/* After the pumps, which wake its loop. */
	follows_free(a->follows);
	/* Every sandbox stopped: their terminals have left the table. */
	sbx_terminals_free(a->terminals);
	sbx_registry_free(a->reg);
	sbx_mem_budget_destroy(&a->mem);
	sbx_config_free(a->cfg);
	free(a);
}

int sbx_adapter_use_backend(struct sbx_adapter *a, const struct sbx_backend_ops *ops, void *ctx,
			    sbx_error_t *err)
{
	a->backend = (struct sbx_backend){ ops, ctx };
	check_capacity(a);
	return reaper_start(&a->reaper, a, err);
}
