/* Parked VMs (vm.h: sbx_vm_options.park, sbx_vm_configure): a warm pool's
 * VMs are restored, run execs of the guest's own (WARM_UP) and wait
 * without their CONFIG; a create hands one its identity. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/strv.h"
#include "vm/vm_internal.h"

/* A warm-up slower than this is abandoned (the guest's own bound is
 * WARM_UP_MS). */
#define WARM_UP_WAIT_MS 30000

void vm_warm_up(struct sbx_vm *vm, int64_t deadline)
{
	int64_t t = sbx_now_ms();
	int64_t until = t + WARM_UP_WAIT_MS;
	sbx_error_t err = NULL;
	if (chan_warm_up(vm->chan, vm->warm_up, deadline >= 0 && deadline < until ? deadline : until, &err) < 0)
		sbx_warn("vm: parked VM not warmed up: %s", sbx_error_msg(err));
	else
		sbx_debug("vm: parked VM warmed up in %lld ms", (long long)(sbx_now_ms() - t));
	sbx_error_free(&err);
	vm->t.warm_up = sbx_now_ms() - t;
}

bool sbx_vm_awaits_template(struct sbx_vm *vm)
{
	return vm->restored && vm->ram_fd >= 0 && !vm->ram_shared && vm->t.loaded == 0 && !vm->park;
}

int sbx_vm_set_identity(struct sbx_vm *vm, char *const *env, const char *user, sbx_error_t *err)
{
	char **e = sbx_strv_dup(env);
	char *u = strdup(user != NULL ? user : "");
	if (e == NULL || u == NULL) {
		sbx_strv_free(e);
		free(u);
		return sbx_error_errno(err, ENOMEM, "vm");
	}
	sbx_strv_free(vm->env);
	free(vm->user);
	vm->env = e;
	vm->user = u;
	return 0;
}

int sbx_vm_configure(struct sbx_vm *vm, char *const *env, const char *user, int64_t deadline, sbx_error_t *err)
{
	if (!vm->park)
		return sbx_error_set(err, EINVAL, "vm: configured already");
	if (sbx_vm_set_identity(vm, env, user, err) < 0)
		return -1;
	vm->park = false;
	int64_t t = sbx_now_ms();
	if (vm_send_config(vm, err) < 0 || chan_wait_ready(vm->chan, deadline, err) < 0)
		return -1;
	vm->t.ready += sbx_now_ms() - t;
	return 0;
}
