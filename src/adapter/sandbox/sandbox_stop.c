/* stop (contract §7.5) and the teardown stop, the reaper and shutdown
 * share. */
#include "adapter/sandbox/sandbox.h"
#include "common/log.h"

void sandbox_teardown(struct sbx_adapter *a, const char *id)
{
	void *vm = sbx_registry_detach(a->reg, id);
	if (vm != NULL && a->backend.ops != NULL)
		a->backend.ops->stop(vm);
	sbx_info("sandbox %s stopped", id);
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
