/* The backend's pause, resume and abort_paused ops (backend.h) over the
 * VM layer's sbx_vm_pause / sbx_vm_resume / sbx_vm_pause_abort (vm/vm.h,
 * issue 40).  A paused state is locked (vm_backend_adopt.c) from before
 * its directory exists until its resume or stop, so that another daemon
 * on the same state directory neither adopts nor removes it. */
#include "adapter/vm_backend/vm_backend_internal.h"

int vm_backend_pause(void *vm, const char *dir, uint64_t *size_bytes, int64_t *duration_ms, int64_t deadline,
		     sbx_error_t *err)
{
	struct sandbox_vm *s = vm;
	struct sbx_vm_pause_info info = { 0 };
	if (s->pause_lock < 0 && vm_backend_pause_lock(s, dir, err) < 0)
		return -1;
	if (sbx_vm_pause(s->vm, dir, &info, deadline, err) < 0) {
		vm_backend_pause_unlock(s, true);
		vm_backend_blame_death(vm, err);
		return -1;
	}
	*size_bytes = info.size_bytes;
	*duration_ms = info.duration_ms;
	return 0;
}

void vm_backend_abort_paused(void *vm)
{
	struct sandbox_vm *s = vm;
	sbx_vm_pause_abort(s->vm, "the sandbox was stopped while paused");
}

int vm_backend_resume(void *vm, int64_t deadline, sbx_error_t *err)
{
	struct sandbox_vm *s = vm;
	if (sbx_vm_resume(s->vm, deadline, err) < 0) {
		vm_backend_blame_death(vm, err);
		return -1;
	}
	/* The state is gone with the resume. */
	vm_backend_pause_unlock(s, true);
	return 0;
}
