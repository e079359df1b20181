/* create with `snapshot` (sandbox_snapshot.h): the snapshot branched into
 * `<state dir>/paused/sb-<new id>` with the sandbox's record made the new
 * sandbox's, adopted as a paused sandbox, resumed. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapter/pause/pause_record.h"
#include "adapter/pause/sandbox_adopt.h"
#include "adapter/pause/sandbox_pause.h"
#include "adapter/sandbox/catalog.h"
#include "adapter/snapshot/sandbox_snapshot.h"
#include "common/cleanup.h"
#include "common/cleanup_json.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/path.h"
#include "common/scodes.h"
#include "common/uuid.h"
#include "common/wall_time.h"
#include "vm/pause_dir.h"

/* A sandbox record holds its processes' logs (pause/sandbox_adopt.c
 * bounds it by the configuration; this is the file's sanity bound). */
#define RECORD_MAX_BYTES ((off_t)1 << 30)

/* The request's shape against the snapshot's. */
static int check(struct sbx_adapter *a, const struct sandbox_create_args *c, const struct snapshot_meta *m,
		 sbx_error_t *err)
{
	if (c->has_cpus && c->cpus != m->cpus)
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST,
				       "cpus=%u differs from snapshot %s's %u: a sandbox created from a snapshot has "
				       "its shape",
				       c->cpus, m->id, m->cpus);
	if (c->has_memory && c->memory_mb != m->memory_mb)
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST,
				       "memory_mb=%u differs from snapshot %s's %u: a sandbox created from a "
				       "snapshot has its shape",
				       c->memory_mb, m->id, m->memory_mb);
	if (c->name != NULL && sbx_uuid_like(c->name))
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST,
				       "`name` '%.64s' looks like a sandbox id: give it another character", c->name);
	/* The image must still be one the operator allows. */
	return sbx_catalog_resolve(a->cfg, m->image, err) != NULL ? 0 : -1;
}

/* The branch's record made the new sandbox's: its id, name, clocks and
 * idle timeout, the snapshot it came from.  Replaced whole (the file is
 * the snapshot's until then: a second name). */
static int rewrite(const char *dir, const struct sandbox_create_args *c, uint64_t idle, bool keep_alive,
		   const char *id, const char *sid, sbx_error_t *err)
{
	cleanup_free char *path = sbx_path_join(dir, PAUSE_SANDBOX);
	if (path == NULL)
		return sbx_error_errno(err, ENOMEM, "sandbox record");
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return sbx_error_scode(err, SBX_S_VM_BOOT, "the snapshot's sandbox record: %s", strerror(errno));
	if (!S_ISREG(st.st_mode) || st.st_size > RECORD_MAX_BYTES)
		return sbx_error_scode(err, SBX_S_VM_BOOT, "the snapshot's sandbox record is not one");
	json_error_t jerr;
	cleanup_json json_t *rec = json_loadfd(fd, JSON_REJECT_DUPLICATES, &jerr);
	json_t *sb = json_object_get(rec, "sandbox");
	if (!json_is_object(sb))
		return sbx_error_scode(err, SBX_S_VM_BOOT, "the snapshot's sandbox record is not one");
	int64_t now = sbx_wall_ms();
	int bad = json_object_set_new(sb, "id", json_string(id)) |
		  json_object_set_new(sb, "name", c->name != NULL ? json_string(c->name) : json_null()) |
		  json_object_set_new(sb, "idle_timeout_secs", json_integer((json_int_t)idle)) |
		  json_object_set_new(sb, "created_ms", json_integer(now)) |
		  json_object_set_new(sb, "last_exec_ms", json_integer(now)) |
		  json_object_set_new(sb, "paused_ms", json_integer(now)) |
		  json_object_set_new(rec, "keep_alive", json_boolean(keep_alive)) |
		  json_object_set_new(rec, "resume_next", json_false()) |
		  json_object_set_new(rec, "snapshot_id", json_string(sid));
	cleanup_free char *text = bad == 0 ? json_dumps(rec, JSON_COMPACT) : NULL;
	if (text == NULL)
		return sbx_error_errno(err, ENOMEM, "sandbox record");
	return pause_record_write_file(dir, PAUSE_SANDBOX, PAUSE_SANDBOX_NEW, text, err);
}

/* The branch in `dir`, made a paused sandbox of id `id`. */
static int branch(struct sbx_adapter *a, const struct sandbox_create_args *c, bool keep_alive, const char *sdir,
		  const char *dir, const char *id, const char *sid, sbx_error_t *err)
{
	const struct sbx_backend_ops *ops = a->backend.ops;
	uint64_t idle = c->has_idle ? c->idle_timeout_secs : a->cfg->default_idle_timeout_secs;
	if (ops->branch_paused(a->backend.ctx, sdir, dir, id, err) < 0) {
		sandbox_as_platform("create from a snapshot", err);
		return -1;
	}
	if (rewrite(dir, c, idle, keep_alive, id, sid, err) < 0 || sandbox_adopt_dir(a, dir, err) < 0) {
		ops->discard_paused(a->backend.ctx, dir);
		return -1;
	}
	return 0;
}

int sandbox_create_from_snapshot(struct sbx_adapter *a, const struct sandbox_create_args *c, const char *snapshot,
				 bool keep_alive, char id[SBX_UUID_STRLEN + 1], char **image, sbx_error_t *err)
{
	const struct sbx_backend_ops *ops = a->backend.ops;
	int64_t t0 = sbx_now_ms();
	*image = NULL;
	char sid[SBX_UUID_STRLEN + 1];
	if (!sbx_uuid_parse(snapshot, sid))
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "unknown snapshot_id '%.64s'", snapshot);
	if (ops == NULL || ops->branch_paused == NULL || ops->adopt == NULL || ops->discard_paused == NULL)
		return sbx_error_scode(err, SBX_S_VM_BOOT, "snapshots are not supported by this sandbox-libkrun build");
	struct snapshot_meta m;
	cleanup_free char *sdir = snapshot_store_find(sid, &m, err);
	if (sdir == NULL)
		return -1;
	int rc = check(a, c, &m, err);
	bool admitted = rc == 0;
	cleanup_free char *dir = NULL;
	if (rc == 0 && sbx_uuid_v4(id) < 0)
		rc = sbx_error_scode(err, SBX_S_VM_BOOT, "cannot generate a sandbox id");
	if (rc == 0 && (dir = sandbox_paused_dir(id, err)) == NULL)
		rc = -1;
	if (rc == 0)
		rc = branch(a, c, keep_alive, sdir, dir, id, sid, err);
	int64_t ready_ms = 0;
	if (rc == 0 && sandbox_resume_paused(a, id, &ready_ms, err) < 0) {
		/* Nothing of it stays: its stop removes the branch. */
		sbx_error_t stop_err = NULL;
		if (sandbox_stop(a, id, &stop_err) < 0)
			sbx_error_free(&stop_err);
		rc = -1;
	}
	if (rc == 0 && (*image = strdup(m.image)) == NULL)
		rc = sbx_error_errno(err, ENOMEM, "create reply");
	/* Refusals of the request (S001, S100) are not counted. */
	if (admitted)
		sandbox_snapshot_count("create", rc, t0);
	if (rc == 0) {
		struct sbx_log_field f[] = { SBX_LF_STR("event", "create"), SBX_LF_STR("sandbox_id", id),
					     SBX_LF_STR("image", m.image), SBX_LF_STR("boot", "snapshot"),
					     SBX_LF_STR("snapshot_id", sid), SBX_LF_INT("ready_ms", sbx_now_ms() - t0) };
		sbx_log_kv(SBX_LOG_INFO, f, "sandbox %s created from snapshot %s", id, sid);
	}
	snapshot_meta_free(&m);
	return rc;
}
