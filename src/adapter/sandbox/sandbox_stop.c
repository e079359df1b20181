/* stop (contract §7.5), at once or handed to the reaper's thread (run's
 * own sandbox); the teardown they end in is in sandbox_teardown.c. */
#include "adapter/reaper.h"
#include "adapter/sandbox/sandbox.h"

int sandbox_stop(struct sbx_adapter *a, const char *id, sbx_error_t *err)
{
	bool was_stopped;
	if (sbx_registry_claim_stop(a->reg, id, &was_stopped, err) < 0)
		return -1;
	/* Claimed by the reaper (or a parallel stop): it does the teardown. */
	if (!was_stopped)
		sandbox_teardown(a, id, SANDBOX_STOP_CALLER);
	return 0;
}

int sandbox_stop_soon(struct sbx_adapter *a, const char *id, sbx_error_t *err)
{
	bool was_stopped;
	if (sbx_registry_claim_stop(a->reg, id, &was_stopped, err) < 0)
		return -1;
	if (!was_stopped) {
		uint64_t mem_mib;
		/* Paused by a caller meanwhile: the detach must not wait out
		 * the calls held for its resume. */
		sandbox_abort_paused(a, id);
		sbx_mem_budget_release_begin(&a->mem);
		void *vm = sbx_registry_detach(a->reg, id, &mem_mib);
		if (!reaper_hand_over(&a->reaper, vm, mem_mib, id))
			sandbox_release(a, id, vm, mem_mib, SANDBOX_STOP_RUN);
	}
	return 0;
}
