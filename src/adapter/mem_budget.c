#include "adapter/mem_budget.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/scodes.h"

void sbx_mem_budget_init(struct sbx_mem_budget *b, uint64_t limit_mib)
{
	pthread_mutex_init(&b->lock, NULL);
	b->limit_mib = limit_mib;
	b->committed_mib = 0;
	b->templates_mib = 0;
	b->vms = 0;
}

void sbx_mem_budget_destroy(struct sbx_mem_budget *b)
{
	pthread_mutex_destroy(&b->lock);
}

int sbx_mem_budget_take(struct sbx_mem_budget *b, uint64_t need_mib, uint64_t guest_mib, sbx_error_t *err)
{
	pthread_mutex_lock(&b->lock);
	uint64_t committed = b->committed_mib, limit = b->limit_mib, tpl = b->templates_mib;
	unsigned vms = b->vms;
	bool fits = need_mib <= limit && tpl <= limit - need_mib && committed <= limit - need_mib - tpl;
	if (fits) {
		b->committed_mib += need_mib;
		b->vms++;
	}
	pthread_mutex_unlock(&b->lock);
	if (fits)
		return 0;
	return sbx_error_scode(err, SBX_S_LIMIT,
			       "memory budget exceeded: this sandbox needs %" PRIu64 " MiB (%" PRIu64
			       " MiB guest memory + %" PRIu64 " MiB for its VM), %" PRIu64 " of memory_budget_mb %" PRIu64
			       " MiB are committed to %u sandbox%s and %" PRIu64
			       " MiB held by snapshot templates; stop a sandbox, ask for less memory_mb, or raise "
			       "memory_budget_mb in the configuration",
			       need_mib, guest_mib, need_mib - guest_mib, committed, limit, vms, vms == 1 ? "" : "es", tpl);
}

void sbx_mem_budget_give(struct sbx_mem_budget *b, uint64_t need_mib)
{
	pthread_mutex_lock(&b->lock);
	b->committed_mib = b->committed_mib > need_mib ? b->committed_mib - need_mib : 0;
	if (b->vms > 0)
		b->vms--;
	pthread_mutex_unlock(&b->lock);
}

void sbx_mem_budget_set_templates(struct sbx_mem_budget *b, uint64_t mib)
{
	pthread_mutex_lock(&b->lock);
	b->templates_mib = mib;
	pthread_mutex_unlock(&b->lock);
}

void sbx_mem_budget_read(struct sbx_mem_budget *b, uint64_t *committed, uint64_t *limit)
{
	pthread_mutex_lock(&b->lock);
	*committed = b->committed_mib + b->templates_mib;
	*limit = b->limit_mib;
	pthread_mutex_unlock(&b->lock);
}

uint64_t sbx_vm_cost_mib(uint32_t guest_mib, uint32_t cpus, enum sbx_accel accel, uint32_t tcg_cache_mib)
{
	uint64_t beside = accel == SBX_ACCEL_KVM ? sbx_kvm_overhead_mib(guest_mib, cpus) : tcg_cache_mib;
	return (uint64_t)guest_mib + SBX_VM_QEMU_BASE_MIB + beside;
}

uint64_t sbx_config_vm_cost_mib(const struct sbx_config *cfg, uint32_t guest_mib, uint32_t cpus)
{
	return sbx_vm_cost_mib(guest_mib, cpus, sbx_config_accel(cfg), cfg->tcg_cache_mb);
}

uint64_t sbx_mem_default_budget_mib(uint64_t memtotal_mib)
{
	uint64_t reserve = memtotal_mib / 100 * SBX_MEM_RESERVE_PERCENT;
	if (reserve < SBX_MEM_RESERVE_MIN_MIB)
		reserve = SBX_MEM_RESERVE_MIN_MIB;
	return memtotal_mib > reserve ? memtotal_mib - reserve : 0;
}

int sbx_host_memtotal_mib(const char *meminfo, uint64_t *out, sbx_error_t *err)
{
	cleanup_file FILE *f = fopen(meminfo, "re");
	if (f == NULL)
		return sbx_error_errno(err, errno, "open %s", meminfo);
	char line[256];
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned long long kib;
		if (sscanf(line, "MemTotal: %llu kB", &kib) == 1 && kib > 0) {
			*out = kib / 1024;
			return 0;
		}
	}
	return sbx_error_set(err, EINVAL, "%s has no MemTotal line", meminfo);
}
