/* sandbox-libkrun::snapshot, fork, snapshot::list and snapshot::delete
 * (issue 39), the extensions over sandbox_snapshot.c and snapshot_store.c;
 * create with `snapshot` is create's (sandbox/handlers_sandbox.c). */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "adapter/handlers.h"
#include "adapter/request.h"
#include "adapter/snapshot/sandbox_fork.h"
#include "adapter/snapshot/sandbox_snapshot.h"
#include "common/cleanup_json.h"
#include "common/scodes.h"

/* A record's entry: what list and snapshot share. */
static json_t *entry(const struct snapshot_meta *m)
{
	char when[32] = "";
	time_t secs = (time_t)(m->created_ms / 1000);
	struct tm tm;
	if (gmtime_r(&secs, &tm) != NULL)
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return json_pack("{s:s, s:s, s:s?, s:s, s:I, s:I, s:b, s:I, s:s}", "snapshot_id", m->id, "sandbox_id",
			 m->source, "name", m->name, "image", m->image, "cpus", (json_int_t)m->cpus, "memory_mb",
			 (json_int_t)m->memory_mb, "network", m->network, "size_bytes", (json_int_t)m->size_bytes,
			 "created_at", when);
}

int sbx_op_snapshot(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *id, *name = NULL;
	char uuid[SBX_UUID_STRLEN + 1];
	if (req_object(req, &err) < 0 || req_string(req, "sandbox_id", true, &id, &err) < 0 ||
	    req_string(req, "name", false, &name, &err) < 0 || req_sandbox_uuid(id, uuid, &err) < 0)
		return sbx_op_fail(&err, out);
	struct snapshot_meta m;
	int64_t paused_ms, duration_ms;
	if (sandbox_snapshot(a, uuid, name, &m, &paused_ms, &duration_ms, &err) < 0)
		return sbx_op_fail(&err, out);
	*out = json_pack("{s:s, s:s, s:s, s:I, s:I, s:b, s:I, s:I, s:I}", "snapshot_id", m.id, "sandbox_id", m.source,
			 "image", m.image, "cpus", (json_int_t)m.cpus, "memory_mb", (json_int_t)m.memory_mb, "network",
			 m.network, "size_bytes", (json_int_t)m.size_bytes, "paused_ms", (json_int_t)paused_ms,
			 "duration_ms", (json_int_t)duration_ms);
	snapshot_meta_free(&m);
	if (*out == NULL) {
		sbx_error_errno(&err, ENOMEM, "snapshot reply");
		return sbx_op_fail(&err, out);
	}
	return 0;
}

int sbx_op_fork(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *id, *name = NULL;
	char uuid[SBX_UUID_STRLEN + 1];
	bool has_count;
	uint32_t count = 1;
	if (req_object(req, &err) < 0 || req_string(req, "sandbox_id", true, &id, &err) < 0 ||
	    req_string(req, "name", false, &name, &err) < 0 || req_u32_opt(req, "count", &has_count, &count, &err) < 0 ||
	    req_sandbox_uuid(id, uuid, &err) < 0)
		return sbx_op_fail(&err, out);
	char ids[SANDBOX_FORK_MAX][SBX_UUID_STRLEN + 1];
	int64_t snapshot_ms, ready_ms;
	if (sandbox_fork(a, uuid, has_count ? count : 1, name, ids, &snapshot_ms, &ready_ms, &err) < 0)
		return sbx_op_fail(&err, out);
	json_t *list = json_array();
	for (uint32_t i = 0; list != NULL && i < (has_count ? count : 1); i++) {
		if (json_array_append_new(list, json_string(ids[i])) < 0) {
			json_decref(list);
			list = NULL;
		}
	}
	*out = list != NULL ? json_pack("{s:o, s:I, s:I}", "sandbox_ids", list, "snapshot_ms", (json_int_t)snapshot_ms,
					"ready_ms", (json_int_t)ready_ms)
			    : NULL;
	if (*out == NULL) {
		sbx_error_errno(&err, ENOMEM, "fork reply");
		return sbx_op_fail(&err, out);
	}
	return 0;
}

struct listing {
	struct sbx_adapter *a;
	json_t *rows;
	bool failed;
};

static void add(const char *dir, const struct snapshot_meta *m, void *ud)
{
	struct listing *l = ud;
	const struct sbx_backend_ops *ops = l->a->backend.ops;
	sbx_error_t why = NULL;
	/* What a create from it would meet first: this build's QEMU, guest
	 * kernel and boot disk against those it ran. */
	bool restorable = ops != NULL && ops->check_paused != NULL && ops->check_paused(l->a->backend.ctx, dir, &why) == 0;
	json_t *e = entry(m);
	if (e == NULL ||
	    json_object_set_new(e, "sandboxes_using",
				json_integer((json_int_t)sbx_registry_from_snapshot(l->a->reg, m->id))) < 0 ||
	    json_object_set_new(e, "restorable", json_boolean(restorable)) < 0 ||
	    (!restorable && json_object_set_new(e, "restore_error", json_string(why != NULL ? sbx_error_msg(why)
										   : "not supported by this build")) < 0) ||
	    json_array_append_new(l->rows, e) < 0)
		l->failed = true;
	sbx_error_free(&why);
}

int sbx_op_snapshot_list(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	if (req != NULL && !json_is_null(req) && req_object(req, &err) < 0)
		return sbx_op_fail(&err, out);
	struct listing l = { a, json_array(), false };
	if (l.rows != NULL)
		snapshot_each(add, &l);
	if (l.rows == NULL || l.failed) {
		json_decref(l.rows);
		sbx_error_errno(&err, ENOMEM, "snapshot::list reply");
		return sbx_op_fail(&err, out);
	}
	/* set_new takes the rows, on failure too. */
	*out = json_object();
	if (*out == NULL || json_object_set_new(*out, "snapshots", l.rows) < 0) {
		if (*out == NULL)
			json_decref(l.rows);
		json_decref(*out);
		*out = NULL;
		sbx_error_errno(&err, ENOMEM, "snapshot::list reply");
		return sbx_op_fail(&err, out);
	}
	return 0;
}

int sbx_op_snapshot_delete(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *id;
	char sid[SBX_UUID_STRLEN + 1];
	if (req_object(req, &err) < 0 || req_string(req, "snapshot_id", true, &id, &err) < 0)
		return sbx_op_fail(&err, out);
	if (!sbx_uuid_parse(id, sid)) {
		sbx_error_scode(&err, SBX_S_INVALID_REQUEST, "unknown snapshot_id '%.64s'", id);
		return sbx_op_fail(&err, out);
	}
	struct snapshot_meta m;
	char *dir = snapshot_store_find(sid, &m, &err);
	if (dir == NULL)
		return sbx_op_fail(&err, out);
	snapshot_meta_free(&m);
	/* Sandboxes created from it run on their own branches: its bytes go
	 * now, those it shares with a branch not yet resumed when that one
	 * does. */
	int rc = snapshot_delete(dir, sid, &err);
	free(dir);
	sandbox_snapshot_account(a);
	if (rc < 0)
		return sbx_op_fail(&err, out);
	*out = json_pack("{s:b}", "deleted", 1);
	return 0;
}
