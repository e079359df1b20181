/* stop (contract §7.5) and the teardown stop, the reaper and shutdown
 * share. */
#include "adapter/sandbox/sandbox.h"
#include "common/log.h"

void sandbox_release(struct sbx_adapter *a, const char *id, void *vm, uint64_t mem_mib)
{
	if (vm != NULL && a->backend.ops != NULL)
		a->backend.ops->stop(vm);
	/* Given back once QEMU is gone, and its memory with it. */
	if (mem_mib > 0)
		sbx_mem_budget_give(&a->mem, mem_mib);
	sbx_info("sandbox %s stopped", id);
}

void sandbox_teardown(struct sbx_adapter *a, const char *id)
{
	uint64_t mem_mib;
	void *vm = sbx_registry_detach(a->reg, id, &mem_mib);
	sandbox_release(a, id, vm, mem_mib);
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
		sandbox_teardown(a, id);
	}
	sbx_error_free(&err);
}

int sandbox_stop(struct sbx_adapter *a, const char *id, sbx_error_t *err)
{
	bool was_stopped;
	if (sbx_registry_claim_stop(a->reg, id, &was_stopped, err) < 0)
		return -1;
	/* Claimed by the reaper (or a parallel stop): it does the teardown. */
	if (!was_stopped)
		sandbox_teardown(a, id);
	return 0;
}

int sandbox_stop_soon(struct sbx_adapter *a, const char *id, sbx_error_t *err)
{
	bool was_stopped;
	if (sbx_registry_claim_stop(a->reg, id, &was_stopped, err) < 0)
		return -1;
	if (!was_stopped) {
		uint64_t mem_mib;
		void *vm = sbx_registry_detach(a->reg, id, &mem_mib);
		if (!reaper_hand_over(&a->reaper, vm, mem_mib, id))
			sandbox_release(a, id, vm, mem_mib);
	}
	return 0;
}
