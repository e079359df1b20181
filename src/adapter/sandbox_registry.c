#include "adapter/sandbox_registry.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/reaper_policy.h"
#include "adapter/sandbox_registry_internal.h"
#include "common/scodes.h"

struct timespec registry_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts;
}

struct sbx_registry *sbx_registry_new(sbx_error_t *err)
{
	struct sbx_registry *reg = calloc(1, sizeof(*reg));
	if (reg == NULL)
		return sbx_error_errno(err, ENOMEM, "sandbox registry"), NULL;
	pthread_mutex_init(&reg->lock, NULL);
	pthread_cond_init(&reg->exec_done, NULL);
	return reg;
}

void registry_unref_locked(struct sbx_sandbox *sb)
{
	if (--sb->refs > 0)
		return;
	free(sb->name);
	free(sb->image);
	json_decref(sb->ports);
	free(sb);
}

void sbx_registry_free(struct sbx_registry *reg)
{
	if (reg == NULL)
		return;
	for (size_t i = 0; i < reg->n; i++)
		registry_unref_locked(reg->items[i]);
	free(reg->items);
	registry_creating_free(reg);
	pthread_cond_destroy(&reg->exec_done);
	pthread_mutex_destroy(&reg->lock);
	free(reg);
}

int sbx_registry_reserve(struct sbx_registry *reg, uint32_t max, sbx_error_t *err)
{
	pthread_mutex_lock(&reg->lock);
	bool full = registry_running_locked(reg) + reg->reserved >= max;
	if (!full)
		reg->reserved++;
	pthread_mutex_unlock(&reg->lock);
	if (full)
		return sbx_error_scode(err, SBX_S_LIMIT, "max_concurrent_sandboxes (%u) reached", max);
	return 0;
}

void sbx_registry_unreserve(struct sbx_registry *reg)
{
	pthread_mutex_lock(&reg->lock);
	if (reg->reserved > 0)
		reg->reserved--;
	pthread_mutex_unlock(&reg->lock);
}

int sbx_registry_insert(struct sbx_registry *reg, const char *id, const char *name, const char *image,
			uint64_t idle_timeout_secs, sbx_error_t *err)
{
	return sbx_registry_insert_vm(reg, id, name, image, idle_timeout_secs, NULL, 0, err);
}

int registry_append_locked(struct sbx_registry *reg, struct sbx_sandbox *sb, sbx_error_t *err)
{
	if (reg->n == reg->cap) {
		size_t ncap = reg->cap ? reg->cap * 2 : 8;
		struct sbx_sandbox **items = realloc(reg->items, ncap * sizeof(*items));
		if (items == NULL)
			return sbx_error_errno(err, ENOMEM, "sandbox registry");
		reg->items = items;
		reg->cap = ncap;
	}
	reg->items[reg->n++] = sb;
	return 0;
}

int sbx_registry_insert_vm(struct sbx_registry *reg, const char *id, const char *name, const char *image,
			   uint64_t idle_timeout_secs, void *vm, uint64_t mem_mib, sbx_error_t *err)
{
	struct sbx_sandbox *sb = calloc(1, sizeof(*sb));
	if (sb == NULL)
		return sbx_error_errno(err, ENOMEM, "sandbox record");
	snprintf(sb->id, sizeof(sb->id), "%s", id);
	sb->name = name != NULL ? strdup(name) : NULL;
	sb->image = strdup(image);
	sb->created_at = sb->last_exec_at = registry_now();
	sb->idle_timeout_secs = idle_timeout_secs;
	sb->vm = vm;
	sb->mem_mib = mem_mib;
	sb->refs = 1;
	if ((name != NULL && sb->name == NULL) || sb->image == NULL) {
		registry_unref_locked(sb);
		return sbx_error_errno(err, ENOMEM, "sandbox record");
	}
	pthread_mutex_lock(&reg->lock);
	if (registry_append_locked(reg, sb, err) < 0) {
		pthread_mutex_unlock(&reg->lock);
		registry_unref_locked(sb);
		return -1;
	}
	registry_take_creating_locked(reg, sb);
	if (reg->reserved > 0)
		reg->reserved--;
	pthread_mutex_unlock(&reg->lock);
	return 0;
}

struct sbx_sandbox *registry_find_locked(struct sbx_registry *reg, const char *id, size_t *index)
{
	for (size_t i = 0; i < reg->n; i++) {
		if (strcmp(reg->items[i]->id, id) == 0) {
			if (index != NULL)
				*index = i;
			return reg->items[i];
		}
	}
	return NULL;
}

static struct sbx_sandbox *acquire_locked(struct sbx_registry *reg, const char *id, sbx_error_t *err)
{
	struct sbx_sandbox *sb = registry_find_locked(reg, id, NULL);
	if (sb == NULL)
		return sbx_error_scode(err, SBX_S_NOT_FOUND, "%s", id), NULL;
	if (sb->stopped)
		return sbx_error_scode(err, SBX_S_STOPPED, "%s", id), NULL;
	if (sb->pause_state != SBX_SB_RUNNING)
		return sbx_error_scode(err, SBX_S_STOPPED, SBX_PAUSED_FMT, id), NULL;
	sb->last_exec_at = registry_now();
	sb->refs++;
	return sb;
}

struct sbx_sandbox *sbx_registry_acquire(struct sbx_registry *reg, const char *id, sbx_error_t *err)
{
	pthread_mutex_lock(&reg->lock);
	struct sbx_sandbox *sb = acquire_locked(reg, id, err);
	pthread_mutex_unlock(&reg->lock);
	return sb;
}

struct sbx_sandbox *sbx_registry_exec_begin(struct sbx_registry *reg, const char *id, uint32_t cap,
					    sbx_error_t *err)
{
	pthread_mutex_lock(&reg->lock);
	struct sbx_sandbox *sb = acquire_locked(reg, id, err);
	if (sb != NULL && sb->exec_in_flight >= (cap > 0 ? cap : 1)) {
		registry_unref_locked(sb);
		sb = NULL;
		sbx_error_scode(err, SBX_S_EXEC_CAP, "sandbox %s is at its exec concurrency cap (max_concurrent_exec_per_sandbox)",
				id);
	} else if (sb != NULL) {
		sb->exec_in_flight++;
	}
	pthread_mutex_unlock(&reg->lock);
	return sb;
}

/* Ends one use counted in *in_flight and wakes a detach waiting for it. */
static void end_use(struct sbx_registry *reg, struct sbx_sandbox *sb, uint32_t *in_flight, bool touch)
{
	pthread_mutex_lock(&reg->lock);
	if (*in_flight > 0)
		(*in_flight)--;
	if (touch)
		sb->last_exec_at = registry_now();
	registry_unref_locked(sb);
	pthread_cond_broadcast(&reg->exec_done);
	pthread_mutex_unlock(&reg->lock);
}

void sbx_registry_exec_end(struct sbx_registry *reg, struct sbx_sandbox *sb)
{
	end_use(reg, sb, &sb->exec_in_flight, true);
}

struct sbx_sandbox *sbx_registry_fs_begin(struct sbx_registry *reg, const char *id, sbx_error_t *err)
{
	pthread_mutex_lock(&reg->lock);
	struct sbx_sandbox *sb = acquire_locked(reg, id, err);
	if (sb != NULL)
		sb->fs_in_flight++;
	pthread_mutex_unlock(&reg->lock);
	return sb;
}

void sbx_registry_fs_end(struct sbx_registry *reg, struct sbx_sandbox *sb)
{
	end_use(reg, sb, &sb->fs_in_flight, false);
}

void sbx_registry_touch(struct sbx_registry *reg, struct sbx_sandbox *sb)
{
	pthread_mutex_lock(&reg->lock);
	sb->last_exec_at = registry_now();
	pthread_mutex_unlock(&reg->lock);
}

void sbx_registry_release(struct sbx_registry *reg, struct sbx_sandbox *sb)
{
	pthread_mutex_lock(&reg->lock);
	registry_unref_locked(sb);
	pthread_mutex_unlock(&reg->lock);
}

int sbx_registry_check(struct sbx_registry *reg, const char *id, sbx_error_t *err)
{
	struct sbx_sandbox *sb = sbx_registry_acquire(reg, id, err);
	if (sb == NULL)
		return -1;
	sbx_registry_release(reg, sb);
	return 0;
}

int sbx_registry_claim_stop(struct sbx_registry *reg, const char *id, bool *was_stopped, sbx_error_t *err)
{
	pthread_mutex_lock(&reg->lock);
	struct sbx_sandbox *sb = registry_find_locked(reg, id, NULL);
	if (sb != NULL) {
		*was_stopped = sb->stopped;
		sb->stopped = true;
	}
	pthread_mutex_unlock(&reg->lock);
	if (sb == NULL)
		return sbx_error_scode(err, SBX_S_NOT_FOUND, "%s", id);
	return 0;
}

void sbx_registry_remove(struct sbx_registry *reg, const char *id)
{
	pthread_mutex_lock(&reg->lock);
	size_t i;
	struct sbx_sandbox *sb = registry_find_locked(reg, id, &i);
	if (sb != NULL) {
		reg->items[i] = reg->items[--reg->n];
		registry_unref_locked(sb);
	}
	pthread_mutex_unlock(&reg->lock);
}

size_t registry_running_locked(struct sbx_registry *reg)
{
	size_t n = 0;
	for (size_t i = 0; i < reg->n; i++)
		n += reg->items[i]->pause_state != SBX_SB_PAUSED;
	return n;
}

size_t sbx_registry_count(struct sbx_registry *reg)
{
	pthread_mutex_lock(&reg->lock);
	size_t n = reg->n;
	pthread_mutex_unlock(&reg->lock);
	return n;
}

size_t sbx_registry_used(struct sbx_registry *reg)
{
	pthread_mutex_lock(&reg->lock);
	size_t n = registry_running_locked(reg) + reg->reserved;
	pthread_mutex_unlock(&reg->lock);
	return n;
}

void sbx_registry_set_ports(struct sbx_registry *reg, const char *id, json_t *ports)
{
	pthread_mutex_lock(&reg->lock);
	struct sbx_sandbox *sb = registry_find_locked(reg, id, NULL);
	if (sb != NULL && sb->ports == NULL) {
		sb->ports = ports;
		ports = NULL;
	}
	pthread_mutex_unlock(&reg->lock);
	json_decref(ports);
}

json_t *sbx_registry_list(struct sbx_registry *reg, uint32_t cap)
{
	uint32_t slots = cap > 0 ? cap : 1;
	json_t *list = json_array();
	if (list == NULL)
		return NULL;
	struct timespec t = registry_now();
	pthread_mutex_lock(&reg->lock);
	for (size_t i = 0; i < reg->n; i++) {
		const struct sbx_sandbox *sb = reg->items[i];
		json_int_t age = (json_int_t)(t.tv_sec - sb->created_at.tv_sec);
		json_t *e = json_pack("{s:s, s:o, s:s, s:I, s:b, s:I, s:I, s:b}", "sandbox_id", sb->id, "name",
				      sb->name != NULL ? json_string(sb->name) : json_null(), "image", sb->image,
				      "age_secs", age, "exec_in_progress", sb->exec_in_flight > 0, "exec_in_flight",
				      (json_int_t)sb->exec_in_flight, "exec_slots_free",
				      (json_int_t)(sb->exec_in_flight >= slots ? 0 : slots - sb->exec_in_flight),
				      "stopped", sb->stopped);
		/* Only paused sandboxes have the field: others keep the contract's. */
		bool paused = sb->pause_state == SBX_SB_PAUSED || sb->pause_state == SBX_SB_RESUMING;
		if (e != NULL && paused && json_object_set_new(e, "state", json_string("paused")) < 0) {
			json_decref(e);
			e = NULL;
		}
		/* Only sandboxes with ports have the field: others keep the contract's. */
		if (e != NULL && sb->ports != NULL && json_object_set_new(e, "ports", json_deep_copy(sb->ports)) < 0) {
			json_decref(e);
			e = NULL;
		}
		if (json_array_append_new(list, e) < 0) {
			pthread_mutex_unlock(&reg->lock);
			json_decref(list);
			return NULL;
		}
	}
	pthread_mutex_unlock(&reg->lock);
	return json_pack("{s:o}", "sandboxes", list);
}

void *sbx_registry_detach(struct sbx_registry *reg, const char *id, uint64_t *mem_mib)
{
	pthread_mutex_lock(&reg->lock);
	struct sbx_sandbox *sb = registry_find_locked(reg, id, NULL);
	/* A pause or resume in progress ends first: the VM is not stopped
	 * under it. */
	while (sb != NULL && (sb->exec_in_flight > 0 || sb->fs_in_flight > 0 || sb->pause_state == SBX_SB_PAUSING ||
			      sb->pause_state == SBX_SB_RESUMING)) {
		pthread_cond_wait(&reg->exec_done, &reg->lock);
		sb = registry_find_locked(reg, id, NULL);
	}
	void *vm = NULL;
	*mem_mib = 0;
	size_t i;
	if (sb != NULL && registry_find_locked(reg, id, &i) == sb) {
		vm = sb->vm;
		*mem_mib = sb->mem_mib;
		sb->vm = NULL;
		reg->items[i] = reg->items[--reg->n];
		registry_unref_locked(sb);
	}
	pthread_mutex_unlock(&reg->lock);
	return vm;
}

bool sbx_registry_stopped(struct sbx_registry *reg, const struct sbx_sandbox *sb)
{
	pthread_mutex_lock(&reg->lock);
	bool stopped = sb->stopped;
	pthread_mutex_unlock(&reg->lock);
	return stopped;
}

static uint64_t elapsed_ms(struct timespec from, struct timespec to)
{
	int64_t ms = (int64_t)(to.tv_sec - from.tv_sec) * 1000 + (to.tv_nsec - from.tv_nsec) / 1000000;
	return ms > 0 ? (uint64_t)ms : 0;
}

void sbx_registry_note_net_activity(struct sbx_registry *reg, int64_t (*activity)(void *vm))
{
	struct timespec wall, t = registry_now();
	clock_gettime(CLOCK_REALTIME, &wall);
	int64_t wall_ms = (int64_t)wall.tv_sec * 1000 + wall.tv_nsec / 1000000;
	pthread_mutex_lock(&reg->lock);
	for (size_t i = 0; i < reg->n; i++) {
		struct sbx_sandbox *sb = reg->items[i];
		/* not stopped: its VM cannot be torn down while we hold the lock */
		int64_t at = !sb->stopped && sb->vm != NULL ? activity(sb->vm) : 0;
		if (at <= 0)
			continue;
		int64_t age_ms = wall_ms > at ? wall_ms - at : 0;
		struct timespec net = t;
		net.tv_sec -= age_ms / 1000;
		net.tv_nsec -= (age_ms % 1000) * 1000000;
		if (net.tv_nsec < 0) {
			net.tv_nsec += 1000000000;
			net.tv_sec--;
		}
		sb->last_net_at = net;
	}
	pthread_mutex_unlock(&reg->lock);
}

static struct timespec later(struct timespec a, struct timespec b)
{
	return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec >= b.tv_nsec) ? a : b;
}

/* Claims (marks stopped) the first record not yet stopped that `decide`
 * does not keep, copying its id; *wedged says why it was picked. */
static bool claim_first(struct sbx_registry *reg, enum reap_decision (*decide)(const struct sbx_sandbox *, void *),
			void *ctx, char id[SBX_UUID_STRLEN + 1], bool *wedged, bool *expired)
{
	bool found = false;
	*wedged = *expired = false;
	pthread_mutex_lock(&reg->lock);
	for (size_t i = 0; i < reg->n && !found; i++) {
		struct sbx_sandbox *sb = reg->items[i];
		if (sb->stopped)
			continue;
		enum reap_decision d = decide(sb, ctx);
		if (d == REAP_KEEP || d == REAP_PAUSE)
			continue;
		sb->stopped = true;
		*wedged = d == REAP_WEDGED;
		*expired = d == REAP_EXPIRED;
		memcpy(id, sb->id, SBX_UUID_STRLEN + 1);
		found = true;
	}
	pthread_mutex_unlock(&reg->lock);
	return found;
}

struct reap_ctx {
	bool all;
	const struct reap_limits *lim;
	struct timespec now;
};

static enum reap_decision decide_idle(const struct sbx_sandbox *sb, void *arg)
{
	const struct reap_ctx *c = arg;
	if (c->all)
		return REAP_IDLE;
	enum reap_decision running = reaper_decide(elapsed_ms(later(sb->last_exec_at, sb->last_net_at), c->now),
						   sb->idle_timeout_secs, sb->exec_in_flight,
						   c->lim->max_exec_timeout_ms);
	return reaper_decide_paused(sb->pause_state == SBX_SB_PAUSED,
				    sb->pause_state == SBX_SB_PAUSING || sb->pause_state == SBX_SB_RESUMING,
				    elapsed_ms(sb->paused_at, c->now), c->lim->paused_ttl_secs, c->lim->pause_idle,
				    running);
}

bool sbx_registry_claim_reapable(struct sbx_registry *reg, bool all, const struct reap_limits *lim,
				 char id[SBX_UUID_STRLEN + 1], bool *wedged, bool *expired)
{
	struct reap_ctx c = { all, lim, registry_now() };
	return claim_first(reg, decide_idle, &c, id, wedged, expired);
}

bool registry_idle_pause_locked(const struct sbx_sandbox *sb, const struct reap_limits *lim)
{
	struct reap_ctx c = { false, lim, registry_now() };
	return !sb->stopped && decide_idle(sb, &c) == REAP_PAUSE;
}

size_t sbx_registry_idle_ids(struct sbx_registry *reg, const struct reap_limits *lim,
			     char (*ids)[SBX_UUID_STRLEN + 1], size_t cap)
{
	struct reap_ctx c = { false, lim, registry_now() };
	size_t n = 0;
	pthread_mutex_lock(&reg->lock);
	for (size_t i = 0; i < reg->n && n < cap; i++) {
		struct sbx_sandbox *sb = reg->items[i];
		if (!sb->stopped && decide_idle(sb, &c) == REAP_PAUSE)
			memcpy(ids[n++], sb->id, SBX_UUID_STRLEN + 1);
	}
	pthread_mutex_unlock(&reg->lock);
	return n;
}

static enum reap_decision decide_dead(const struct sbx_sandbox *sb, void *arg)
{
	bool (*alive)(void *vm) = *(bool (**)(void *))arg;
	return sb->vm != NULL && !alive(sb->vm) ? REAP_IDLE : REAP_KEEP;
}

bool sbx_registry_claim_dead(struct sbx_registry *reg, bool (*alive)(void *vm), char id[SBX_UUID_STRLEN + 1])
{
	bool wedged, expired;
	return claim_first(reg, decide_dead, &alive, id, &wedged, &expired);
}
