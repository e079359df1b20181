/* Paused records that outlive the daemon (sandbox_registry.h,
 * issue 40 item 4): a later daemon inserts what an earlier one paused,
 * the shutdown asks which paused records it keeps, and a live_restore
 * shutdown which sandboxes run. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/sandbox_registry_internal.h"
#include "common/scodes.h"

struct sbx_sandbox *sbx_registry_insert_paused(struct sbx_registry *reg, const struct sbx_sandbox *from, void *vm,
					       sbx_error_t *err)
{
	struct sbx_sandbox *sb = calloc(1, sizeof(*sb));
	if (sb == NULL)
		return sbx_error_errno(err, ENOMEM, "sandbox record"), NULL;
	snprintf(sb->id, sizeof(sb->id), "%s", from->id);
	sb->name = from->name != NULL ? strdup(from->name) : NULL;
	sb->image = strdup(from->image);
	sb->refs = 1;
	if ((from->name != NULL && sb->name == NULL) || sb->image == NULL) {
		registry_unref_locked(sb);
		return sbx_error_errno(err, ENOMEM, "sandbox record"), NULL;
	}
	sb->created_at = from->created_at;
	sb->last_exec_at = from->last_exec_at;
	sb->last_net_at = from->last_net_at;
	sb->idle_timeout_secs = from->idle_timeout_secs;
	sb->cpus = from->cpus;
	sb->memory_mb = from->memory_mb;
	sb->network = from->network;
	sb->pause_state = SBX_SB_PAUSED;
	sb->paused_bytes = from->paused_bytes;
	sb->resume_mib = from->resume_mib;
	sb->paused_at = from->paused_at;
	memcpy(sb->snapshot_id, from->snapshot_id, sizeof(sb->snapshot_id));
	sb->pause_kept = true;
	pthread_mutex_lock(&reg->lock);
	/* Ids are the daemon's own (uuid v4): a clash is a copied directory. */
	if (registry_find_locked(reg, from->id, NULL) != NULL) {
		pthread_mutex_unlock(&reg->lock);
		registry_unref_locked(sb);
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "sandbox %s exists already", from->id), NULL;
	}
	if (registry_append_locked(reg, sb, err) < 0) {
		pthread_mutex_unlock(&reg->lock);
		registry_unref_locked(sb);
		return NULL;
	}
	/* Owned from here: freed with the record, never by the caller. */
	sb->vm = vm;
	sb->ports = from->ports;
	sb->refs++;
	pthread_mutex_unlock(&reg->lock);
	return sb;
}

void sbx_registry_hold_fs(struct sbx_registry *reg, struct sbx_sandbox *sb)
{
	pthread_mutex_lock(&reg->lock);
	sb->fs_in_flight++;
	sb->refs++;
	pthread_mutex_unlock(&reg->lock);
}

void sbx_registry_set_kept(struct sbx_registry *reg, struct sbx_sandbox *sb)
{
	pthread_mutex_lock(&reg->lock);
	sb->pause_kept = sb->pause_state == SBX_SB_PAUSED || sb->pause_state == SBX_SB_PAUSING;
	pthread_mutex_unlock(&reg->lock);
}

bool sbx_registry_is_kept(struct sbx_registry *reg, const char *id)
{
	pthread_mutex_lock(&reg->lock);
	struct sbx_sandbox *sb = registry_find_locked(reg, id, NULL);
	bool kept = sb != NULL && sb->pause_state == SBX_SB_PAUSED && sb->pause_kept;
	pthread_mutex_unlock(&reg->lock);
	return kept;
}

size_t sbx_registry_running_ids(struct sbx_registry *reg, char (*ids)[SBX_UUID_STRLEN + 1], size_t cap)
{
	size_t n = 0;
	pthread_mutex_lock(&reg->lock);
	for (size_t i = 0; i < reg->n && n < cap; i++) {
		struct sbx_sandbox *sb = reg->items[i];
		if (!sb->stopped && sb->vm != NULL && sb->pause_state == SBX_SB_RUNNING)
			memcpy(ids[n++], sb->id, SBX_UUID_STRLEN + 1);
	}
	pthread_mutex_unlock(&reg->lock);
	return n;
}
