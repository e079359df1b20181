/* A sandbox's pause state in the registry (issue 40): the transitions
 * pause and resume make under the registry's lock, so a stop, the reaper
 * and concurrent callers see one state (sandbox_registry.h). */
#include <stdio.h>

#include "adapter/sandbox_registry_internal.h"
#include "common/scodes.h"

/* Paused sandboxes and those being paused or resumed: what
 * max_paused_sandboxes and snapshot_store_mb count (a pause in progress
 * with the bytes it may write, pause_begin). */
static size_t paused_locked(struct sbx_registry *reg, uint64_t *bytes)
{
	size_t n = 0;
	*bytes = 0;
	for (size_t i = 0; i < reg->n; i++) {
		const struct sbx_sandbox *sb = reg->items[i];
		if (sb->pause_state == SBX_SB_RUNNING)
			continue;
		n++;
		*bytes += sb->paused_bytes;
	}
	return n;
}

struct sbx_sandbox *sbx_registry_pause_begin(struct sbx_registry *reg, const char *id, uint32_t max_paused,
					     uint64_t store_bytes, const struct reap_limits *if_idle, sbx_error_t *err)
{
	pthread_mutex_lock(&reg->lock);
	struct sbx_sandbox *sb = registry_find_locked(reg, id, NULL);
	/* The reaper's pause: a call since its scan keeps the sandbox
	 * running (an exec admitted meanwhile is never killed). */
	if (if_idle != NULL && sb != NULL && sb->pause_state == SBX_SB_RUNNING &&
	    !registry_idle_pause_locked(sb, if_idle)) {
		pthread_mutex_unlock(&reg->lock);
		return NULL;
	}
	uint64_t bytes = 0;
	size_t n = paused_locked(reg, &bytes);
	/* Its state is at most its guest's RAM (what the guest touched) and
	 * the device state beside it. */
	uint64_t need_bytes = sb != NULL ? (uint64_t)sb->memory_mb << 20 : 0;
	if (sb == NULL) {
		sbx_error_scode(err, SBX_S_NOT_FOUND, "%s", id);
	} else if (sb->stopped) {
		sbx_error_scode(err, SBX_S_STOPPED, "%s", id);
	} else if (sb->capturing) {
		sbx_error_scode(err, SBX_S_INVALID_REQUEST, "sandbox %s is being snapshotted: pause it once the snapshot "
				"is taken", id);
	} else if (sb->pause_state != SBX_SB_RUNNING) {
		sbx_error_scode(err, SBX_S_INVALID_REQUEST, "sandbox %s is %s", id,
				sb->pause_state == SBX_SB_PAUSED    ? "paused already"
				: sb->pause_state == SBX_SB_PAUSING ? "being paused"
								    : "being resumed");
	} else if (max_paused == 0) {
		sbx_error_scode(err, SBX_S_LIMIT, "pausing is turned off (max_paused_sandboxes is 0)");
	} else if (n >= max_paused) {
		sbx_error_scode(err, SBX_S_LIMIT, "max_paused_sandboxes (%u) reached: resume or stop a paused sandbox",
				max_paused);
	} else if (bytes + reg->snapshot_bytes + need_bytes > store_bytes) {
		sbx_error_scode(err, SBX_S_LIMIT,
				"snapshot_store_mb (%llu MiB) would be passed: paused sandboxes hold %llu MiB and "
				"snapshots %llu MiB, this one needs up to %llu MiB",
				(unsigned long long)(store_bytes >> 20), (unsigned long long)(bytes >> 20),
				(unsigned long long)(reg->snapshot_bytes >> 20),
				(unsigned long long)((need_bytes + (1u << 20) - 1) >> 20));
	} else {
		sb->pause_state = SBX_SB_PAUSING;
		/* Held for it until pause_end, so that pauses at the same
		 * time cannot pass snapshot_store_mb together. */
		sb->paused_bytes = need_bytes;
		sb->refs++;
		pthread_mutex_unlock(&reg->lock);
		return sb;
	}
	pthread_mutex_unlock(&reg->lock);
	return NULL;
}

void sbx_registry_pause_drain(struct sbx_registry *reg, struct sbx_sandbox *sb)
{
	pthread_mutex_lock(&reg->lock);
	while (sb->exec_in_flight > 0)
		pthread_cond_wait(&reg->exec_done, &reg->lock);
	pthread_mutex_unlock(&reg->lock);
}

uint64_t sbx_registry_pause_end(struct sbx_registry *reg, struct sbx_sandbox *sb, bool ok, uint64_t bytes)
{
	uint64_t given = 0;
	pthread_mutex_lock(&reg->lock);
	if (ok) {
		sb->pause_state = SBX_SB_PAUSED;
		sb->paused_bytes = bytes;
		sb->paused_at = registry_now();
		/* Its QEMU is gone: the memory goes back to the budget until a
		 * resume takes it again. */
		given = sb->mem_mib;
		sb->resume_mib = sb->mem_mib;
		sb->mem_mib = 0;
	} else {
		sb->pause_state = SBX_SB_RUNNING;
		sb->paused_bytes = 0;
	}
	registry_unref_locked(sb);
	pthread_cond_broadcast(&reg->exec_done);
	pthread_mutex_unlock(&reg->lock);
	return given;
}

bool sbx_registry_pausing(struct sbx_registry *reg, const struct sbx_sandbox *sb)
{
	pthread_mutex_lock(&reg->lock);
	bool pausing = sb->pause_state == SBX_SB_PAUSING;
	pthread_mutex_unlock(&reg->lock);
	return pausing;
}

struct sbx_sandbox *sbx_registry_resume_begin(struct sbx_registry *reg, const char *id, uint32_t max_running,
					      bool *running, uint64_t *need_mib, sbx_error_t *err)
{
	*running = false;
	*need_mib = 0;
	pthread_mutex_lock(&reg->lock);
	struct sbx_sandbox *sb = registry_find_locked(reg, id, NULL);
	/* One resume at a time; the other callers wait for its outcome. */
	while (sb != NULL && !sb->stopped &&
	       (sb->pause_state == SBX_SB_PAUSING || sb->pause_state == SBX_SB_RESUMING)) {
		pthread_cond_wait(&reg->exec_done, &reg->lock);
		sb = registry_find_locked(reg, id, NULL);
	}
	struct sbx_sandbox *out = NULL;
	if (sb == NULL)
		sbx_error_scode(err, SBX_S_NOT_FOUND, "%s", id);
	else if (sb->stopped)
		sbx_error_scode(err, SBX_S_STOPPED, "%s", id);
	else if (sb->pause_state == SBX_SB_RUNNING)
		*running = true;
	else if (registry_running_locked(reg) + reg->reserved >= max_running)
		sbx_error_scode(err, SBX_S_LIMIT, "max_concurrent_sandboxes (%u) reached: sandbox %s cannot resume",
				max_running, id);
	else
		out = sb;
	if (out != NULL) {
		out->pause_state = SBX_SB_RESUMING;
		out->refs++;
		*need_mib = out->resume_mib;
	}
	pthread_mutex_unlock(&reg->lock);
	return out;
}

void sbx_registry_resume_end(struct sbx_registry *reg, struct sbx_sandbox *sb, bool ok)
{
	pthread_mutex_lock(&reg->lock);
	if (ok) {
		sb->pause_state = SBX_SB_RUNNING;
		sb->mem_mib = sb->resume_mib;
		sb->resume_mib = 0;
		sb->paused_bytes = 0;
		sb->pause_kept = false;
		/* The resume was a call: its idle clock starts again. */
		sb->last_exec_at = registry_now();
	} else {
		sb->pause_state = SBX_SB_PAUSED;
	}
	registry_unref_locked(sb);
	pthread_cond_broadcast(&reg->exec_done);
	pthread_mutex_unlock(&reg->lock);
}

void *sbx_registry_paused_vm(struct sbx_registry *reg, const char *id)
{
	pthread_mutex_lock(&reg->lock);
	struct sbx_sandbox *sb = registry_find_locked(reg, id, NULL);
	/* A capture (a snapshot) pauses and resumes the VM under the record
	 * of a running sandbox: the stop waits for it as for those. */
	while (sb != NULL &&
	       (sb->pause_state == SBX_SB_PAUSING || sb->pause_state == SBX_SB_RESUMING || sb->capturing)) {
		pthread_cond_wait(&reg->exec_done, &reg->lock);
		sb = registry_find_locked(reg, id, NULL);
	}
	void *vm = sb != NULL && sb->stopped && sb->pause_state == SBX_SB_PAUSED ? sb->vm : NULL;
	pthread_mutex_unlock(&reg->lock);
	return vm;
}

bool sbx_registry_stopped_paused(struct sbx_registry *reg, const struct sbx_sandbox *sb)
{
	pthread_mutex_lock(&reg->lock);
	bool stopped_paused = sb->stopped && sb->pause_state == SBX_SB_PAUSED;
	pthread_mutex_unlock(&reg->lock);
	return stopped_paused;
}

size_t sbx_registry_paused(struct sbx_registry *reg, uint64_t *bytes)
{
	pthread_mutex_lock(&reg->lock);
	size_t n = paused_locked(reg, bytes);
	pthread_mutex_unlock(&reg->lock);
	return n;
}

bool sbx_registry_vm_paused(struct sbx_registry *reg, const struct sbx_sandbox *sb)
{
	pthread_mutex_lock(&reg->lock);
	bool paused = sb->pause_state != SBX_SB_RUNNING;
	pthread_mutex_unlock(&reg->lock);
	return paused;
}

bool sbx_registry_is_paused(struct sbx_registry *reg, const char *id)
{
	pthread_mutex_lock(&reg->lock);
	const struct sbx_sandbox *sb = registry_find_locked(reg, id, NULL);
	bool paused = sb != NULL && !sb->stopped && sb->pause_state != SBX_SB_RUNNING;
	pthread_mutex_unlock(&reg->lock);
	return paused;
}
