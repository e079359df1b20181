/* A sandbox's VM as the backend's parts use it: its handle, why it died,
 * its stop.  Below vm_backend.c's table and the boot and exec files, which
 * all call it. */
#include <stdlib.h>

#include "adapter/vm_backend/vm_backend_internal.h"
#include "common/clock.h"
#include "common/scodes.h"

#define DEATH_WAIT_MS 2000 /* QEMU's exit after the guest connection broke */

struct sbx_vm *vm_backend_vm(void *sandbox_vm)
{
	return ((struct sandbox_vm *)sandbox_vm)->vm;
}

/* A call that failed because the VM went says so, and why, rather than
 * what broke on the way (a lost connection, a refused spawn). */
void vm_backend_blame_death(void *sandbox_vm, sbx_error_t *err)
{
	struct sandbox_vm *s = sandbox_vm;
	if (*err == NULL)
		return;
	if (sbx_vm_alive(s->vm))
		return;
	char cause[256];
	sbx_vm_death_cause(s->vm, DEATH_WAIT_MS, cause, sizeof(cause));
	sbx_error_free(err);
	sbx_error_scode(err, SBX_S_VM_BOOT, "%s", cause);
}

void vm_backend_stop(void *vm)
{
	struct sandbox_vm *s = vm;
	sbx_vm_stop(s->vm, sbx_now_ms() + VM_BACKEND_STOP_MS);
	vm_backend_pause_unlock(s, true);
	free(s->workdir);
	free(s->image);
	free(s);
}
