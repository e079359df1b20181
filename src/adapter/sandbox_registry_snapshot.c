/* A sandbox's part in snapshots (sandbox_registry.h, issue 39): the mark
 * that keeps a pause off a sandbox being captured, and which snapshot a
 * sandbox was created from. */
#include <stdio.h>
#include <string.h>

#include "adapter/sandbox_registry_internal.h"
#include "common/scodes.h"

struct sbx_sandbox *sbx_registry_capture_begin(struct sbx_registry *reg, const char *id, sbx_error_t *err)
{
	pthread_mutex_lock(&reg->lock);
	struct sbx_sandbox *sb = registry_find_locked(reg, id, NULL);
	if (sb == NULL)
		sbx_error_scode(err, SBX_S_NOT_FOUND, "%s", id);
	else if (sb->stopped)
		sbx_error_scode(err, SBX_S_STOPPED, "%s", id);
	else if (sb->pause_state != SBX_SB_RUNNING)
		sbx_error_scode(err, SBX_S_INVALID_REQUEST, "sandbox %s is %s: resume it to snapshot it", id,
				sb->pause_state == SBX_SB_PAUSED ? "paused" : "being paused or resumed");
	else if (sb->capturing)
		sbx_error_scode(err, SBX_S_INVALID_REQUEST, "a snapshot of sandbox %s is being taken already", id);
	else if (sb->vm == NULL)
		sbx_error_scode(err, SBX_S_STOPPED, "%s", id);
	else {
		sb->capturing = true;
		sb->last_exec_at = registry_now();
		sb->refs++;
		pthread_mutex_unlock(&reg->lock);
		return sb;
	}
	pthread_mutex_unlock(&reg->lock);
	return NULL;
}

void sbx_registry_capture_end(struct sbx_registry *reg, struct sbx_sandbox *sb)
{
	pthread_mutex_lock(&reg->lock);
	sb->capturing = false;
	registry_unref_locked(sb);
	pthread_cond_broadcast(&reg->exec_done);
	pthread_mutex_unlock(&reg->lock);
}

size_t sbx_registry_from_snapshot(struct sbx_registry *reg, const char *sid)
{
	size_t n = 0;
	pthread_mutex_lock(&reg->lock);
	for (size_t i = 0; i < reg->n; i++) {
		const struct sbx_sandbox *sb = reg->items[i];
		n += !sb->stopped && strcmp(sb->snapshot_id, sid) == 0;
	}
	pthread_mutex_unlock(&reg->lock);
	return n;
}

void sbx_registry_set_snapshot_bytes(struct sbx_registry *reg, uint64_t bytes)
{
	pthread_mutex_lock(&reg->lock);
	reg->snapshot_bytes = bytes;
	pthread_mutex_unlock(&reg->lock);
}
