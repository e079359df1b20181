/* The real backend (backend.h): images from src/image, VMs from src/vm. */
#ifndef SBX_ADAPTER_VM_BACKEND_H
#define SBX_ADAPTER_VM_BACKEND_H

#include "adapter/backend.h"
#include "adapter/config/config.h"
#include "common/error.h"
#include "jail/jail.h"

#define VM_BACKEND_READY_MS 30000 /* guest ready, else S300 (contract §6.3) */
#define VM_BACKEND_STOP_MS 200    /* grace before the VM is killed */

extern const struct sbx_backend_ops vm_backend_ops;

/* The backend's context: the image config derived from `cfg` (borrowed;
 * must outlive the context) and the jail of its VMs (owned from here on,
 * even on failure; NULL: unconfined). */
void *vm_backend_new(const struct sbx_config *cfg, struct sbx_jail_host *jail, sbx_error_t *err);
/* Stops the warm pool and the standby VMs first. */
void vm_backend_free(void *ctx);
/* Starts the warm pool of the configuration (warm_pool.h) and the
 * standby VMs (standby.h): serve only. */
void vm_backend_start_pool(void *ctx);
/* The VM of a sandbox this backend booted (for vm_backend_fs.c). */
struct sbx_vm *vm_backend_vm(void *sandbox_vm);
/* Sets the gauges of the warm pool and the standby VMs (a scrape). */
void vm_backend_collect_metrics(void *ctx);
/* After a failed call: when the VM is gone, *err becomes S300 naming why
 * ("the sandbox's VM exited: killed by signal 9 (Killed)"). */
void vm_backend_blame_death(void *sandbox_vm, sbx_error_t *err);

#endif
