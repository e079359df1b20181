/* Pause and resume of a running VM (vm.h sbx_vm_pause, sbx_vm_resume).
 * Placeholder until the implementation lands: every pause is refused. */
#include <errno.h>

#include "vm/vm_internal.h"

int sbx_vm_pause(struct sbx_vm *vm, const char *dir, struct sbx_vm_pause_info *info, int64_t deadline,
		 sbx_error_t *err)
{
	(void)vm, (void)dir, (void)info, (void)deadline;
	return sbx_error_set(err, ENOTSUP, "pause is not built yet");
}

bool sbx_vm_paused(struct sbx_vm *vm)
{
	(void)vm;
	return false;
}

int sbx_vm_resume(struct sbx_vm *vm, int64_t deadline, sbx_error_t *err)
{
	(void)vm, (void)deadline;
	return sbx_error_set(err, ENOTSUP, "resume is not built yet");
}
