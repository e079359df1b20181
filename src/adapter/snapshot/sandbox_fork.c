/* sandbox-libkrun::fork (issue 39 item 3): a snapshot taken for the
 * purpose and `count` sandboxes created from it, all or nothing; the
 * snapshot goes once they run (each has its own branch of it). */
#include "adapter/snapshot/sandbox_fork.h"

#include <stdlib.h>
#include <string.h>

#include "adapter/pause/sandbox_pause.h"
#include "adapter/snapshot/sandbox_snapshot.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/scodes.h"

/* Whether `count` more sandboxes the size of `id` fit now: checked before
 * anything is captured (the creates check again, and a fork that loses a
 * race undoes what it made). */
static int fits(struct sbx_adapter *a, const char *id, uint32_t count, sbx_error_t *err)
{
	struct sbx_sandbox *sb = sbx_registry_acquire(a->reg, id, err);
	if (sb == NULL)
		return -1;
	uint64_t need = sb->mem_mib;
	sbx_registry_release(a->reg, sb);
	uint32_t reserved = 0;
	int rc = 0;
	while (reserved < count && (rc = sbx_registry_reserve(a->reg, a->cfg->max_concurrent_sandboxes, err)) == 0)
		reserved++;
	while (reserved-- > 0)
		sbx_registry_unreserve(a->reg);
	if (rc < 0)
		return sbx_error_prefix(err, "fork of %u", count);
	uint64_t committed, limit;
	sbx_mem_budget_read(&a->mem, &committed, &limit);
	if (committed + need * count > limit)
		return sbx_error_scode(err, SBX_S_LIMIT,
				       "memory_budget_mb: %u forks need %llu MiB, %llu MiB of %llu MiB are free", count,
				       (unsigned long long)(need * count),
				       (unsigned long long)(limit > committed ? limit - committed : 0),
				       (unsigned long long)limit);
	return 0;
}

/* The transient snapshot goes: the forks have their own branches. */
static void drop(struct sbx_adapter *a, const char *sid)
{
	struct snapshot_meta m;
	sbx_error_t err = NULL;
	cleanup_free char *dir = snapshot_store_find(sid, &m, &err);
	if (dir == NULL || snapshot_delete(dir, sid, &err) < 0)
		sbx_warn("fork: its snapshot %s stays: %s", sid, sbx_error_msg(err));
	sbx_error_free(&err);
	if (dir != NULL)
		snapshot_meta_free(&m);
	sandbox_snapshot_account(a);
}

int sandbox_fork(struct sbx_adapter *a, const char *id, uint32_t count, const char *name,
		 char (*ids)[SBX_UUID_STRLEN + 1], int64_t *snapshot_ms, int64_t *ready_ms, sbx_error_t *err)
{
	int64_t t0 = sbx_now_ms();
	*snapshot_ms = *ready_ms = 0;
	if (count < 1 || count > SANDBOX_FORK_MAX)
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "count must be 1 to %u, not %u", SANDBOX_FORK_MAX,
				       count);
	if (sandbox_wake(a, id, err) < 0 || fits(a, id, count, err) < 0)
		return -1;
	struct snapshot_meta m;
	int64_t paused_ms, duration_ms;
	if (sandbox_snapshot(a, id, NULL, &m, &paused_ms, &duration_ms, err) < 0)
		return -1;
	*snapshot_ms = duration_ms;
	struct sandbox_create_args c = { .name = name };
	uint32_t made = 0;
	int rc = 0;
	for (; made < count && rc == 0; made += rc == 0) {
		char *image = NULL;
		rc = sandbox_create_from_snapshot(a, &c, m.id, false, ids[made], &image, err);
		free(image);
	}
	/* All or nothing: the forks made so far go. */
	for (uint32_t i = 0; rc < 0 && i < made; i++) {
		sbx_error_t stop_err = NULL;
		if (sandbox_stop(a, ids[i], &stop_err) < 0)
			sbx_error_free(&stop_err);
	}
	drop(a, m.id);
	sandbox_snapshot_count("fork", rc, t0);
	if (rc == 0) {
		*ready_ms = sbx_now_ms() - t0;
		sbx_info("sandbox %s forked %u time%s in %lld ms (snapshot %lld ms)", id, count, count == 1 ? "" : "s",
			 (long long)*ready_ms, (long long)*snapshot_ms);
	}
	snapshot_meta_free(&m);
	return rc;
}
