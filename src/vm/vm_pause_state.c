/* Where a VM stands between running and paused, as the rest of the VM
 * layer asks it (vm_internal.h vm_pause_*).  Apart from vm_pause.c so that
 * vm.c can ask without calling into the pause itself, which calls vm.c. */
#include <stdio.h>

#include "vm/pause_dir.h"
#include "vm/vm_internal.h"

const char *vm_pause_state_name(enum vm_pause_state s)
{
	switch (s) {
	case VM_RUNNING: return "running";
	case VM_PAUSING: return "being paused";
	case VM_PAUSED: return "paused";
	case VM_RESUMING: return "being resumed";
	case VM_RESUME_FAILED: return "dead (its resume failed)";
	}
	return "?";
}

bool sbx_vm_paused(struct sbx_vm *vm)
{
	pthread_mutex_lock(&vm->lock);
	bool paused = vm->pause_state == VM_PAUSED;
	pthread_mutex_unlock(&vm->lock);
	return paused;
}

bool vm_pause_running(struct sbx_vm *vm)
{
	pthread_mutex_lock(&vm->lock);
	bool running = vm->pause_state == VM_RUNNING;
	pthread_mutex_unlock(&vm->lock);
	return running;
}

int vm_pause_alive(struct sbx_vm *vm)
{
	pthread_mutex_lock(&vm->lock);
	enum vm_pause_state s = vm->pause_state;
	pthread_mutex_unlock(&vm->lock);
	return s == VM_RUNNING ? -1 : s != VM_RESUME_FAILED;
}

bool vm_pause_death_cause(struct sbx_vm *vm, char *buf, size_t len)
{
	pthread_mutex_lock(&vm->lock);
	bool failed = vm->pause_state == VM_RESUME_FAILED;
	if (failed)
		snprintf(buf, len, "the sandbox's VM did not resume from its pause: %s", vm->pause_error);
	pthread_mutex_unlock(&vm->lock);
	return failed;
}

/* Paused, or its resume failed: no QEMU, the channel held or dead. */
static bool held_paused(struct sbx_vm *vm)
{
	pthread_mutex_lock(&vm->lock);
	bool paused = vm->pause_state == VM_PAUSED || vm->pause_state == VM_RESUME_FAILED;
	pthread_mutex_unlock(&vm->lock);
	return paused;
}

void sbx_vm_pause_abort(struct sbx_vm *vm, const char *reason)
{
	if (held_paused(vm))
		chan_abort_hold(vm->chan, reason);
}

bool vm_pause_stop(struct sbx_vm *vm)
{
	if (!held_paused(vm))
		return false;
	/* Whoever still waits on the channel fails now. */
	chan_abort_hold(vm->chan, "the VM was stopped while paused");
	if (vm->pause_dir != NULL)
		pause_dir_remove(vm->pause_dir);
	return true;
}

int64_t vm_pause_net_activity(struct sbx_vm *vm)
{
	pthread_mutex_lock(&vm->lock);
	int64_t kept = vm->net_activity_kept;
	/* Between two helpers the beacon is not there to read. */
	int64_t now = vm->pause_state == VM_RUNNING ? net_link_activity_ms(&vm->net) : 0;
	pthread_mutex_unlock(&vm->lock);
	return now > kept ? now : kept;
}
