/* What the operator sees of the registry (control/): the creates in
 * progress, which the contract's list and every per-sandbox call ignore,
 * and one row per sandbox with its shape and state. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/sandbox_registry_internal.h"

static void creating_free(struct sbx_sandbox *c)
{
	free(c->name);
	free(c->image);
	free(c);
}

void registry_creating_free(struct sbx_registry *reg)
{
	for (size_t i = 0; i < reg->n_creating; i++)
		creating_free(reg->creating[i]);
	free(reg->creating);
}

int sbx_registry_creating_begin(struct sbx_registry *reg, const char *id, const char *name, const char *image,
				uint32_t cpus, uint32_t memory_mb, bool network, sbx_error_t *err)
{
	struct sbx_sandbox *c = calloc(1, sizeof(*c));
	if (c == NULL)
		return sbx_error_errno(err, ENOMEM, "sandbox record");
	snprintf(c->id, sizeof(c->id), "%s", id);
	c->name = name != NULL ? strdup(name) : NULL;
	c->image = strdup(image);
	clock_gettime(CLOCK_MONOTONIC, &c->created_at);
	c->last_exec_at = c->created_at;
	c->cpus = cpus;
	c->memory_mb = memory_mb;
	c->network = network;
	if ((name != NULL && c->name == NULL) || c->image == NULL) {
		creating_free(c);
		return sbx_error_errno(err, ENOMEM, "sandbox record");
	}
	pthread_mutex_lock(&reg->lock);
	if (reg->n_creating == reg->cap_creating) {
		size_t ncap = reg->cap_creating ? reg->cap_creating * 2 : 4;
		struct sbx_sandbox **v = realloc(reg->creating, ncap * sizeof(*v));
		if (v == NULL) {
			pthread_mutex_unlock(&reg->lock);
			creating_free(c);
			return sbx_error_errno(err, ENOMEM, "sandbox registry");
		}
		reg->creating = v;
		reg->cap_creating = ncap;
	}
	reg->creating[reg->n_creating++] = c;
	pthread_mutex_unlock(&reg->lock);
	return 0;
}

/* Under the lock: takes the create of `id` out of the list (NULL: none). */
static struct sbx_sandbox *take_locked(struct sbx_registry *reg, const char *id)
{
	for (size_t i = 0; i < reg->n_creating; i++) {
		struct sbx_sandbox *c = reg->creating[i];
		if (strcmp(c->id, id) == 0) {
			reg->creating[i] = reg->creating[--reg->n_creating];
			return c;
		}
	}
	return NULL;
}

void registry_take_creating_locked(struct sbx_registry *reg, struct sbx_sandbox *sb)
{
	struct sbx_sandbox *c = take_locked(reg, sb->id);
	if (c == NULL)
		return;
	sb->cpus = c->cpus;
	sb->memory_mb = c->memory_mb;
	sb->network = c->network;
	creating_free(c);
}

void sbx_registry_creating_end(struct sbx_registry *reg, const char *id)
{
	pthread_mutex_lock(&reg->lock);
	struct sbx_sandbox *c = take_locked(reg, id);
	pthread_mutex_unlock(&reg->lock);
	if (c != NULL)
		creating_free(c);
}

static json_int_t secs_since(struct timespec from, struct timespec now)
{
	return from.tv_sec < now.tv_sec ? (json_int_t)(now.tv_sec - from.tv_sec) : 0;
}

static json_t *row(const struct sbx_sandbox *sb, const char *state, struct timespec now)
{
	struct timespec last = sb->last_exec_at;
	if (sb->last_net_at.tv_sec > last.tv_sec)
		last = sb->last_net_at;
	return json_pack("{s:s, s:o, s:s, s:s, s:I, s:I, s:I, s:I, s:b, s:I}", "sandbox_id", sb->id, "name",
			 sb->name != NULL ? json_string(sb->name) : json_null(), "image", sb->image, "state", state,
			 "age_secs", secs_since(sb->created_at, now), "idle_secs", secs_since(last, now), "cpus",
			 (json_int_t)sb->cpus, "memory_mb", (json_int_t)sb->memory_mb, "network", sb->network,
			 "exec_in_flight", (json_int_t)sb->exec_in_flight);
}

static const char *state_name(const struct sbx_sandbox *sb)
{
	static const char *const paused[] = { [SBX_SB_RUNNING] = "running", [SBX_SB_PAUSING] = "pausing",
					      [SBX_SB_PAUSED] = "paused", [SBX_SB_RESUMING] = "resuming" };
	return sb->stopped ? "stopping" : paused[sb->pause_state];
}

json_t *sbx_registry_rows(struct sbx_registry *reg, void (*facts)(void *vm, json_t *row, void *ud), void *ud)
{
	json_t *rows = json_array();
	if (rows == NULL)
		return NULL;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	bool ok = true;
	pthread_mutex_lock(&reg->lock);
	for (size_t i = 0; i < reg->n_creating && ok; i++)
		ok = json_array_append_new(rows, row(reg->creating[i], "creating", now)) == 0;
	for (size_t i = 0; i < reg->n && ok; i++) {
		const struct sbx_sandbox *sb = reg->items[i];
		json_t *r = row(sb, state_name(sb), now);
		if (r != NULL && sb->ports != NULL && json_object_set_new(r, "ports", json_deep_copy(sb->ports)) < 0) {
			json_decref(r);
			r = NULL;
		}
		/* A fork or a sandbox created from a snapshot (issue 39). */
		if (r != NULL && sb->snapshot_id[0] != '\0' &&
		    json_object_set_new(r, "snapshot_id", json_string(sb->snapshot_id)) < 0) {
			json_decref(r);
			r = NULL;
		}
		if (r != NULL && facts != NULL && sb->vm != NULL && !sb->stopped)
			facts(sb->vm, r, ud);
		ok = json_array_append_new(rows, r) == 0;
	}
	pthread_mutex_unlock(&reg->lock);
	if (!ok) {
		json_decref(rows);
		return NULL;
	}
	return rows;
}
