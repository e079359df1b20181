/* A worker's VM (ARCHITECTURE.md 2.9): cold boot of its image on its data
 * disk, networking on, its host directory shared read-only with
 * virtio-fs, the console kept in logs/console.log, jailed like a sandbox's
 * QEMU. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "adapter/mem_budget.h"
#include "common/scodes.h"
#include "vm/accel.h"
#include "vm/vm.h"
#include "worker/worker_launch.h"

/* How long a QEMU that failed under KVM is given to finish exiting. */
#define WORKER_KVM_EXIT_WAIT_MS 2000

struct sbx_vm *worker_vm_boot(const struct worker_launch *l, sbx_error_t *err)
{
	const struct sbx_config *cfg = l->t->cfg;
	char disk[4200], console[4200];
	snprintf(disk, sizeof(disk), "%s/" WORKER_DATA_DISK, l->dir);
	snprintf(console, sizeof(console), "%s/" WORKER_LOG_DIR "/console.log", l->dir);
	/* One share: a networked VM has room for no more (worker_config.c);
	 * the directory this start checked, by its descriptor. */
	struct sbx_vm_share share = { l->rec.host_path,
				      l->rec.source == WORKER_SOURCE_PATH ? "/mnt/host-src" : "/workspace", true,
				      l->host_fd };
	struct sbx_vm_options opt = {
		.cpus = l->rec.cpus,
		.memory_mib = l->rec.memory_mb,
		.accel = sbx_config_accel(cfg),
		.image = l->rec.image_erofs,
		.env = l->env,
		.user = l->rec.image_user,
		.nofile = l->nofile,
		.nested_virt = l->nested_virt,
		.smt = l->smt,
		.krunfw_path = cfg->krunfw_path,
		.tcg_cache_mib = cfg->tcg_cache_mb,
		.cold_boot = true,
		.net_args = l->net_args,
		.jail = l->t->jail,
		.jail_memory_mib = (unsigned)l->mem_cost,
		.shares = &share,
		.n_shares = 1,
		.data_disk = disk,
		.console_log = console,
	};
	struct sbx_vm *vm = sbx_vm_start(&opt, err);
	if (vm != NULL && sbx_vm_wait_ready(vm, sbx_now_ms() + WORKER_BOOT_MS, err) == 0)
		return vm;
	/* QEMU died under KVM before the guest's first word: under auto the
	 * daemon's decision becomes TCG (vm/accel.h) and this VM starts again
	 * under it, as a sandbox's does (vm_backend_boot.c), with the TCG
	 * cost as its cgroup's limit. */
	char cause[256];
	if (vm != NULL && sbx_vm_kvm_refused(vm, WORKER_KVM_EXIT_WAIT_MS, cause, sizeof(cause)) &&
	    sbx_accel_choice_fall_back(cfg->accel_in_use, cause)) {
		sbx_vm_stop(vm, sbx_now_ms() + WORKER_STOP_MS);
		sbx_error_free(err);
		opt.accel = sbx_config_accel(cfg);
		opt.jail_memory_mib = (unsigned)sbx_config_vm_cost_mib(cfg, l->rec.memory_mb, l->rec.cpus);
		vm = sbx_vm_start(&opt, err);
		if (vm != NULL && sbx_vm_wait_ready(vm, sbx_now_ms() + WORKER_BOOT_MS, err) == 0)
			return vm;
	}
	if (vm != NULL)
		sbx_vm_stop(vm, sbx_now_ms() + WORKER_STOP_MS);
	sbx_error_prefix(err, "worker %s", l->rec.worker);
	/* Whatever the VM layer called it, for worker::start it is S506. */
	snprintf((*err)->scode, sizeof((*err)->scode), "%s", SBX_S_WORKER_BOOT);
	return NULL;
}
