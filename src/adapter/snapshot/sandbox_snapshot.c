/* The capture of a snapshot (sandbox_snapshot.h). */
#include "adapter/snapshot/sandbox_snapshot.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/pause/pause_record.h"
#include "adapter/pause/sandbox_pause.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/metrics_families.h"
#include "common/scodes.h"
#include "common/wall_time.h"

/* What the snapshots and paused sandboxes hold beside this one's guest
 * RAM (its state is at most that, with its device state) must stay within
 * snapshot_store_mb. */
static int store_check(struct sbx_adapter *a, const struct sbx_sandbox *sb, sbx_error_t *err)
{
	uint64_t store = (uint64_t)a->cfg->pause.snapshot_store_mb << 20, paused = 0;
	sbx_registry_paused(a->reg, &paused);
	uint64_t held = snapshot_store_bytes(), need = (uint64_t)sb->memory_mb << 20;
	if (held + paused + need <= store)
		return 0;
	return sbx_error_scode(err, SBX_S_LIMIT,
			       "snapshot_store_mb (%llu MiB) would be passed: snapshots hold %llu MiB and paused "
			       "sandboxes %llu MiB, this snapshot needs up to %llu MiB; delete a snapshot "
			       "(sandbox-libkrun::snapshot::delete)",
			       (unsigned long long)(store >> 20), (unsigned long long)(held >> 20),
			       (unsigned long long)(paused >> 20), (unsigned long long)(need >> 20));
}

/* With the source paused into `cap`: its records beside the state, and
 * the branch `tmp` that becomes the snapshot. */
static int keep_and_branch(struct sbx_adapter *a, struct sbx_sandbox *sb, const char *cap, const char *tmp,
			   uint64_t size, sbx_error_t *err)
{
	const struct sbx_backend_ops *ops = a->backend.ops;
	json_t *state = NULL;
	/* Unsynced: the snapshot's own files are synced once the source runs
	 * again (finish), not while it stands still. */
	int rc = ops->pause_keep(sb->vm, false, sbx_now_ms() + SANDBOX_PAUSE_DEADLINE_MS, &state, err);
	if (rc == 0)
		rc = pause_record_write(a, sb, size, state, false, cap, err);
	json_decref(state);
	if (rc == 0)
		rc = ops->branch_paused(a->backend.ctx, cap, tmp, NULL, err);
	return rc;
}

/* The branch made whole under its id: record written, files synced,
 * renamed into place. */
static int finish(const char *tmp, const char *final, const struct snapshot_meta *m, sbx_error_t *err)
{
	if (snapshot_meta_write(tmp, m, err) < 0 || snapshot_sync(tmp, err) < 0)
		return -1;
	if (rename(tmp, final) < 0)
		return sbx_error_errno(err, errno, "rename %s", tmp);
	return 0;
}

struct capture {
	char sid[SBX_UUID_STRLEN + 1];
	char *root, *cap, *tmp, *final;
};

static void capture_free(struct capture *c)
{
	free(c->root);
	free(c->cap);
	free(c->tmp);
	free(c->final);
}

static int paths(struct capture *c, sbx_error_t *err)
{
	if (sbx_uuid_v4(c->sid) < 0)
		return sbx_error_scode(err, SBX_S_VM_BOOT, "cannot generate a snapshot id");
	if ((c->root = snapshot_root(err)) == NULL ||
	    (c->cap = snapshot_path(c->root, SNAPSHOT_CAPTURE_PREFIX, c->sid, err)) == NULL ||
	    (c->tmp = snapshot_path(c->root, SNAPSHOT_NEW_PREFIX, c->sid, err)) == NULL ||
	    (c->final = snapshot_path(c->root, "", c->sid, err)) == NULL)
		return -1;
	return 0;
}

void sandbox_snapshot_account(struct sbx_adapter *a)
{
	sbx_registry_set_snapshot_bytes(a->reg, snapshot_store_bytes());
}

void sandbox_snapshot_count(const char *op, int rc, int64_t t0)
{
	sbx_metric_add(&sbx_m_snapshots, (const char *[]){ op, rc == 0 ? "ok" : "failed" }, 1);
	if (rc == 0)
		sbx_metric_observe(&sbx_m_snapshot_seconds, (const char *[]){ op }, (double)(sbx_now_ms() - t0) / 1000.0);
}

/* *dead: the source did not run again (its caller removes it). */
static int capture(struct sbx_adapter *a, struct sbx_sandbox *sb, const char *name, struct snapshot_meta *m,
		   int64_t *paused_ms, bool *dead, sbx_error_t *err)
{
	const struct sbx_backend_ops *ops = a->backend.ops;
	if (ops == NULL || ops->pause == NULL || ops->pause_keep == NULL || ops->resume == NULL ||
	    ops->branch_paused == NULL)
		return sbx_error_scode(err, SBX_S_VM_BOOT, "snapshots are not supported by this sandbox-libkrun build");
	__attribute__((cleanup(capture_free))) struct capture c = { 0 };
	if (store_check(a, sb, err) < 0 || paths(&c, err) < 0)
		return -1;
	if (sandbox_space_check(c.cap, "snapshot", (uint64_t)sb->memory_mb << 20, err) < 0)
		return -1;
	int64_t t0 = sbx_now_ms();
	uint64_t size = 0;
	int64_t pause_ms = 0;
	if (ops->pause(sb->vm, c.cap, &size, &pause_ms, t0 + SANDBOX_PAUSE_DEADLINE_MS, err) < 0) {
		sandbox_as_platform("snapshot", err);
		*dead = sandbox_vm_dead(a, sb);
		return -1;
	}
	int rc = keep_and_branch(a, sb, c.cap, c.tmp, size, err);
	/* The source runs again whatever became of the branch; the resume
	 * removes `cap`. */
	sbx_error_t rerr = NULL;
	if (ops->resume(sb->vm, sbx_now_ms() + SANDBOX_RESUME_DEADLINE_MS, &rerr) < 0) {
		sbx_warn("sandbox %s: did not run again after its snapshot: %s", sb->id, sbx_error_msg(rerr));
		*dead = true;
		if (rc == 0) {
			rc = -1;
			*err = rerr;
			rerr = NULL;
			sandbox_as_platform("snapshot", err);
		}
		sbx_error_free(&rerr);
	}
	*paused_ms = sbx_now_ms() - t0;
	*m = (struct snapshot_meta){ .cpus = sb->cpus, .memory_mb = sb->memory_mb, .network = sb->network,
				     .size_bytes = size, .created_ms = sbx_wall_ms() };
	memcpy(m->id, c.sid, sizeof(m->id));
	memcpy(m->source, sb->id, sizeof(m->source));
	if (rc == 0 && ((name != NULL && (m->name = strdup(name)) == NULL) || (m->image = strdup(sb->image)) == NULL))
		rc = sbx_error_errno(err, ENOMEM, "snapshot record");
	if (rc == 0)
		rc = finish(c.tmp, c.final, m, err);
	if (rc < 0) {
		snapshot_store_remove_dir(c.tmp);
		snapshot_meta_free(m);
	}
	return rc;
}

int sandbox_snapshot(struct sbx_adapter *a, const char *id, const char *name, struct snapshot_meta *m,
		     int64_t *paused_ms, int64_t *duration_ms, sbx_error_t *err)
{
	int64_t t0 = sbx_now_ms();
	memset(m, 0, sizeof(*m));
	*paused_ms = *duration_ms = 0;
	if (sandbox_wake(a, id, err) < 0)
		return -1;
	struct sbx_sandbox *sb = sbx_registry_capture_begin(a->reg, id, err);
	if (sb == NULL)
		return -1;
	bool dead = false;
	int rc = capture(a, sb, name, m, paused_ms, &dead, err);
	sbx_registry_capture_end(a->reg, sb);
	sandbox_snapshot_count("snapshot", rc, t0);
	if (rc == 0)
		sandbox_snapshot_account(a);
	/* After the mark is gone: the removal's stop waits for it. */
	if (dead)
		sandbox_remove_dead(a, id);
	if (rc < 0)
		return -1;
	*duration_ms = sbx_now_ms() - t0;
	struct sbx_log_field f[] = { SBX_LF_STR("event", "snapshot"), SBX_LF_STR("sandbox_id", id),
				     SBX_LF_STR("snapshot_id", m->id), SBX_LF_INT("size_bytes", m->size_bytes),
				     SBX_LF_INT("paused_ms", *paused_ms), SBX_LF_INT("duration_ms", *duration_ms) };
	sbx_log_kv(SBX_LOG_INFO, f, "sandbox %s snapshotted as %s (%llu MiB; it stood still %lld ms)", id, m->id,
		   (unsigned long long)(m->size_bytes >> 20), (long long)*paused_ms);
	return 0;
}
