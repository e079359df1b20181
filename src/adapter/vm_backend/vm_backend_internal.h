/* What the parts of the VM backend share: its context, a sandbox's VM, and
 * the ops that vm_backend.c's table takes from vm_backend_boot.c (boot) and
 * vm_backend_exec.c (exec).  Only files of this folder include it. */
#ifndef SBX_ADAPTER_VM_BACKEND_INTERNAL_H
#define SBX_ADAPTER_VM_BACKEND_INTERNAL_H

#include "adapter/vm_backend/standby.h"
#include "adapter/vm_backend/vm_backend.h"
#include "adapter/vm_backend/warm_pool.h"
#include "vm/vm.h"

struct backend {
	const struct sbx_config *cfg;
	struct sbx_jail_host *jail;
	struct warm_pool *pool; /* NULL: no warm_pool */
	struct standby *standby; /* NULL: config standby false */
};

struct sandbox_vm {
	struct sbx_vm *vm;
	char *workdir; /* the image's WorkingDir, or NULL */
	char *image;   /* a standby's image file (gone: the image was removed) */
	const char *boot_mode; /* how it started: "pool", "standby", "restore" or "cold" */
};

/* The ops of the table (backend.h says what each one does). */
void *vm_backend_boot(void *ctx, const struct sbx_boot_request *req, sbx_error_t *err);
int vm_backend_exec(void *vm, const struct sbx_exec_request *req, struct sbx_exec_result *res, sbx_error_t *err);
void vm_backend_stop(void *vm);

#endif
