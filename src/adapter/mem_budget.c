#include "adapter/mem_budget.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/scodes.h"

void sbx_mem_budget_init(struct sbx_mem_budget *b, uint64_t limit_mib)
{
	pthread_mutex_init(&b->lock, NULL);
	sbx_cond_init_monotonic(&b->released);
	b->release_begun = 0;
	b->release_done = 0;
	b->limit_mib = limit_mib;
	b->committed_mib = 0;
	b->templates_mib = 0;
	b->logs_bytes = 0;
	b->vms = 0;
	b->logs = 0;
}

void sbx_mem_budget_destroy(struct sbx_mem_budget *b)
{
	pthread_cond_destroy(&b->released);
	pthread_mutex_destroy(&b->lock);
}

#define MIB_CEIL(bytes) (((bytes) >> 20) + (((bytes) & ((1u << 20) - 1)) != 0))

/* Whether `need_mib` more fits beside `held_mib` (no overflow). */
static bool fits_mib(const struct sbx_mem_budget *b, uint64_t held_mib, uint64_t need_mib)
{
	uint64_t limit = b->limit_mib;
	return need_mib <= limit && held_mib <= limit - need_mib;
}

/* a + b, UINT64_MAX when it does not fit. */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* What is held besides the VMs: the templates and the logs, in MiB. */
static uint64_t beside_vms_mib(const struct sbx_mem_budget *b, uint64_t logs_bytes)
{
	return sat_add(b->templates_mib, MIB_CEIL(logs_bytes));
}

int sbx_mem_budget_take(struct sbx_mem_budget *b, uint64_t need_mib, uint64_t guest_mib, sbx_error_t *err)
{
	pthread_mutex_lock(&b->lock);
	uint64_t committed = b->committed_mib, limit = b->limit_mib, tpl = b->templates_mib;
	uint64_t logs = MIB_CEIL(b->logs_bytes);
	unsigned vms = b->vms;
	bool fits = fits_mib(b, sat_add(committed, beside_vms_mib(b, b->logs_bytes)), need_mib);
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
			       " MiB are committed to %u sandbox%s, %" PRIu64 " MiB held by snapshot templates and %" PRIu64
			       " MiB by background processes' logs; stop a sandbox, ask for less memory_mb, or raise "
			       "memory_budget_mb in the configuration",
			       need_mib, guest_mib, need_mib - guest_mib, committed, limit, vms, vms == 1 ? "" : "es", tpl,
			       logs);
}

void sbx_mem_budget_give(struct sbx_mem_budget *b, uint64_t need_mib)
{
	pthread_mutex_lock(&b->lock);
	b->committed_mib = b->committed_mib > need_mib ? b->committed_mib - need_mib : 0;
	if (b->vms > 0)
		b->vms--;
	pthread_mutex_unlock(&b->lock);
}

void sbx_mem_budget_release_begin(struct sbx_mem_budget *b)
{
	pthread_mutex_lock(&b->lock);
	b->release_begun++;
	pthread_mutex_unlock(&b->lock);
}

void sbx_mem_budget_release_end(struct sbx_mem_budget *b, uint64_t mem_mib)
{
	if (mem_mib > 0)
		sbx_mem_budget_give(b, mem_mib);
	pthread_mutex_lock(&b->lock);
	b->release_done++;
	pthread_cond_broadcast(&b->released);
	pthread_mutex_unlock(&b->lock);
}

bool sbx_mem_budget_wait_released(struct sbx_mem_budget *b, int64_t timeout_ms)
{
	struct timespec until = sbx_ms_timespec(sbx_now_ms() + timeout_ms);
	bool done = true;
	pthread_mutex_lock(&b->lock);
	uint64_t want = b->release_begun;
	while (done && b->release_done < want)
		done = pthread_cond_timedwait(&b->released, &b->lock, &until) != ETIMEDOUT;
	done = b->release_done >= want;
	pthread_mutex_unlock(&b->lock);
	return done;
}

int sbx_mem_budget_take_logs(struct sbx_mem_budget *b, uint64_t bytes, sbx_error_t *err)
{
	pthread_mutex_lock(&b->lock);
	uint64_t vms_mib = b->committed_mib, limit = b->limit_mib, tpl = b->templates_mib;
	uint64_t logs = b->logs_bytes;
	unsigned n = b->logs;
	/* The logs already held and these, rounded up together. */
	bool fits = bytes <= UINT64_MAX - logs && fits_mib(b, sat_add(vms_mib, tpl), MIB_CEIL(logs + bytes));
	if (fits) {
		b->logs_bytes += bytes;
		b->logs++;
	}
	pthread_mutex_unlock(&b->lock);
	if (fits)
		return 0;
	return sbx_error_scode(err, SBX_S_LIMIT,
			       "memory budget exceeded: a background process's logs need %" PRIu64
			       " bytes (2 x background_log_bytes), %" PRIu64 " of memory_budget_mb %" PRIu64
			       " MiB are committed (%" PRIu64 " MiB to VMs, %" PRIu64 " MiB to snapshot templates, %" PRIu64
			       " bytes to the logs of %u background process%s); stop a sandbox or a background process's "
			       "sandbox, lower background_log_bytes, or raise memory_budget_mb in the configuration",
			       bytes, sat_add(sat_add(vms_mib, tpl), MIB_CEIL(logs)), limit, vms_mib, tpl, logs, n, n == 1 ? "" : "es");
}

void sbx_mem_budget_give_logs(struct sbx_mem_budget *b, uint64_t bytes)
{
	pthread_mutex_lock(&b->lock);
	b->logs_bytes = b->logs_bytes > bytes ? b->logs_bytes - bytes : 0;
	if (b->logs > 0)
		b->logs--;
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
	*committed = sat_add(b->committed_mib, beside_vms_mib(b, b->logs_bytes));
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
