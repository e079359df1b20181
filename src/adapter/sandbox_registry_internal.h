/* The registry's insides, shared by sandbox_registry.c (the records),
 * sandbox_registry_view.c (creates in progress, the operator's rows),
 * which the first calls and which calls nothing of it, and
 * sandbox_registry_pause.c (pause states), which calls the first. */
#ifndef SBX_ADAPTER_SANDBOX_REGISTRY_INTERNAL_H
#define SBX_ADAPTER_SANDBOX_REGISTRY_INTERNAL_H

#include <pthread.h>

#include "adapter/sandbox_registry.h"

struct sbx_registry {
	pthread_mutex_t lock;
	pthread_cond_t exec_done; /* broadcast when an exec ends or a pause state settles */
	struct sbx_sandbox **items;
	size_t n, cap;
	uint32_t reserved;
	uint64_t snapshot_bytes; /* the snapshots' on disk (sbx_registry_set_snapshot_bytes) */
	struct sbx_sandbox **creating; /* creates in progress: not records */
	size_t n_creating, cap_creating;
};

/* Under the lock: gives `sb` the shape of the create in progress of its id
 * and ends that create. */
void registry_take_creating_locked(struct sbx_registry *reg, struct sbx_sandbox *sb);
void registry_creating_free(struct sbx_registry *reg);
/* sandbox_registry.c's, for sandbox_registry_pause.c. */
/* Adds `sb` to the records (not taking a reservation). */
int registry_append_locked(struct sbx_registry *reg, struct sbx_sandbox *sb, sbx_error_t *err);
struct sbx_sandbox *registry_find_locked(struct sbx_registry *reg, const char *id, size_t *index);
void registry_unref_locked(struct sbx_sandbox *sb);
struct timespec registry_now(void);
/* Whether the reaper's policy says to pause `sb` now (idle_action pause). */
bool registry_idle_pause_locked(const struct sbx_sandbox *sb, const struct reap_limits *lim);
/* Records not paused (those being paused or resumed have a QEMU, or are
 * about to): what max_concurrent_sandboxes counts. */
size_t registry_running_locked(struct sbx_registry *reg);

#endif
