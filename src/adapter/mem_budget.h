/* Admission by memory: every live VM is counted at its worst case (guest
 * RAM plus what its QEMU needs beside it), and so is every background
 * process's pair of log rings (2 x background_log_bytes, the daemon's own
 * memory); a create or a background exec that would take the total past
 * the budget fails with S400 instead of letting the host's OOM killer
 * choose a victim later.  Thread-safe. */
#ifndef SBX_ADAPTER_MEM_BUDGET_H
#define SBX_ADAPTER_MEM_BUDGET_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "adapter/config/config.h"
#include "common/error.h"
#include "vm/accel.h"

/* QEMU's own memory beside guest RAM and the translation cache, measured
 * with busy python sandboxes (docs/security.md, "Memory: admission and the OOM killer"): heap, device state, I/O
 * buffers, libraries. */
#define SBX_VM_QEMU_BASE_MIB 64
/* A networked VM's helper (libslirp, c-ares): 3-4 MiB peak RSS measured
 * by bench/net, doubled. */
#define SBX_NET_HELPER_MIB 8
/* Left to the host when the budget comes from MemTotal: the daemon, the
 * engine, page cache for the images. */
#define SBX_MEM_RESERVE_MIN_MIB 1024
#define SBX_MEM_RESERVE_PERCENT 10

struct sbx_mem_budget {
	pthread_mutex_t lock;
	uint64_t limit_mib;
	uint64_t committed_mib;
	uint64_t templates_mib; /* the templates' RAM memfds this process holds now */
	uint64_t logs_bytes;    /* background processes' log rings at their worst case */
	unsigned vms;
	unsigned logs;          /* the background processes holding logs_bytes */
	/* Sandboxes being released: claimed for a stop (no longer listed),
	 * their QEMU not yet gone, their memory still committed. */
	pthread_cond_t released;
	uint64_t release_begun, release_done;
};

void sbx_mem_budget_init(struct sbx_mem_budget *b, uint64_t limit_mib);
void sbx_mem_budget_destroy(struct sbx_mem_budget *b);
/* Commits `need_mib` for one VM whose guest has `guest_mib`, or fails with
 * S400 naming the budget, what is committed and how to raise it. */
int sbx_mem_budget_take(struct sbx_mem_budget *b, uint64_t need_mib, uint64_t guest_mib, sbx_error_t *err);
void sbx_mem_budget_give(struct sbx_mem_budget *b, uint64_t need_mib);
/* A sandbox's release: begun when it is claimed for a stop, ended when
 * its QEMU is gone and its `mem_mib` given back. */
void sbx_mem_budget_release_begin(struct sbx_mem_budget *b);
void sbx_mem_budget_release_end(struct sbx_mem_budget *b, uint64_t mem_mib);
/* Waits, at most `timeout_ms`, until as many releases have ended as had
 * begun at the call: a create that does not fit asks again after them,
 * since a sandbox that left `list` must not hold its memory against the
 * next one.  False on timeout. */
bool sbx_mem_budget_wait_released(struct sbx_mem_budget *b, int64_t timeout_ms);
/* Commits `bytes` for one background process's log rings, or fails with
 * S400 naming the budget, what is committed, background_log_bytes and how
 * to make room. */
int sbx_mem_budget_take_logs(struct sbx_mem_budget *b, uint64_t bytes, sbx_error_t *err);
void sbx_mem_budget_give_logs(struct sbx_mem_budget *b, uint64_t bytes);
/* What the templates' RAM files hold now (shmem: no VM's, but the host's
 * memory all the same); counted with what is committed. */
void sbx_mem_budget_set_templates(struct sbx_mem_budget *b, uint64_t mib);
/* What a take is checked against: *committed (the VMs holding memory,
 * sandboxes and worker VMs, plus the templates and the background logs
 * rounded up to MiB) and *limit. */
void sbx_mem_budget_read(struct sbx_mem_budget *b, uint64_t *committed, uint64_t *limit);

/* A VM's worst case under `accel`: guest RAM and QEMU's base, plus the
 * translation cache under TCG (and under AUTO: not decided yet), plus
 * KVM's own allocations under KVM (sbx_kvm_overhead_mib: page tables,
 * memslot maps, vCPU state, all charged to the VM's cgroup). */
uint64_t sbx_vm_cost_mib(uint32_t guest_mib, uint32_t cpus, enum sbx_accel accel, uint32_t tcg_cache_mib);
/* The same for a VM of this configuration under its decision. */
uint64_t sbx_config_vm_cost_mib(const struct sbx_config *cfg, uint32_t guest_mib, uint32_t cpus);
/* MemTotal minus the host's reserve (the larger of SBX_MEM_RESERVE_MIN_MIB
 * and SBX_MEM_RESERVE_PERCENT of it). */
uint64_t sbx_mem_default_budget_mib(uint64_t memtotal_mib);
/* MemTotal of a meminfo file ("/proc/meminfo"), in MiB. */
int sbx_host_memtotal_mib(const char *meminfo, uint64_t *out, sbx_error_t *err);

#endif
