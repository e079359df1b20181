/* The teardown that stop, the reaper and shutdown share, and the removal
 * of a sandbox whose VM is gone.  Below sandbox_stop.c and the reaper:
 * calls neither. */
#include <string.h>

#include "adapter/adapter_metrics.h"
#include "adapter/process/process_table.h"
#include "adapter/sandbox/sandbox.h"
#include "common/clock.h"
#include "common/log.h"

void sandbox_release(struct sbx_adapter *a, const char *id, void *vm, uint64_t mem_mib, const char *reason)
{
	int64_t t0 = sbx_now_ms();
	/* What its ports saw since the last scrape, before they go. */
	sbx_adapter_count_published(a, vm);
	if (vm != NULL && a->backend.ops != NULL)
		a->backend.ops->stop(vm);
	/* Its background processes ended with their pumps (the detach waited
	 * for them); their logs go now. */
	if (a->procs != NULL)
		process_table_drop(a->procs, id);
	/* Given back once QEMU is gone, and its memory with it. */
	sbx_mem_budget_release_end(&a->mem, mem_mib);
	struct sbx_log_field f[] = { SBX_LF_STR("event", "stop"), SBX_LF_STR("sandbox_id", id),
				     SBX_LF_STR("reason", reason), SBX_LF_INT("duration_ms", sbx_now_ms() - t0) };
	sbx_log_kv(SBX_LOG_INFO, f, "sandbox %s stopped (%s)", id, reason);
}

void sandbox_abort_paused(struct sbx_adapter *a, const char *id)
{
	const struct sbx_backend_ops *ops = a->backend.ops;
	void *vm = sbx_registry_paused_vm(a->reg, id);
	if (vm != NULL && ops != NULL && ops->abort_paused != NULL)
		ops->abort_paused(vm);
}

/* The daemon stops with the sandbox paused and its record written: the
 * state stays for the next daemon (pause/sandbox_adopt.h), only this
 * process's hold on it goes. */
static void keep_paused(struct sbx_adapter *a, const char *id)
{
	uint64_t mem_mib;
	sandbox_abort_paused(a, id);
	sbx_mem_budget_release_begin(&a->mem);
	void *vm = sbx_registry_detach(a->reg, id, &mem_mib);
	if (vm != NULL)
		a->backend.ops->forget(vm);
	if (a->procs != NULL)
		process_table_drop(a->procs, id);
	sbx_mem_budget_release_end(&a->mem, mem_mib);
	struct sbx_log_field f[] = { SBX_LF_STR("event", "keep"), SBX_LF_STR("sandbox_id", id) };
	sbx_log_kv(SBX_LOG_INFO, f, "sandbox %s stays paused for the next daemon", id);
}

void sandbox_teardown(struct sbx_adapter *a, const char *id, const char *reason)
{
	uint64_t mem_mib;
	const struct sbx_backend_ops *ops = a->backend.ops;
	if (strcmp(reason, SANDBOX_STOP_SHUTDOWN) == 0 && ops != NULL && ops->forget != NULL &&
	    sbx_registry_is_kept(a->reg, id)) {
		keep_paused(a, id);
		return;
	}
	sandbox_abort_paused(a, id);
	sbx_mem_budget_release_begin(&a->mem);
	void *vm = sbx_registry_detach(a->reg, id, &mem_mib);
	sandbox_release(a, id, vm, mem_mib, reason);
}

bool sandbox_vm_dead(struct sbx_adapter *a, const struct sbx_sandbox *sb)
{
	const struct sbx_backend_ops *ops = a->backend.ops;
	return sb->vm != NULL && ops != NULL && ops->alive != NULL && !ops->alive(sb->vm);
}

void sandbox_remove_dead(struct sbx_adapter *a, const char *id)
{
	bool was_stopped;
	sbx_error_t err = NULL;
	if (sbx_registry_claim_stop(a->reg, id, &was_stopped, &err) == 0 && !was_stopped) {
		sbx_warn("sandbox %s: its VM is gone; removing the sandbox", id);
		sandbox_teardown(a, id, SANDBOX_STOP_VM_DEATH);
	}
	sbx_error_free(&err);
}
