/* Finding again the paused sandboxes an earlier daemon left
 * (sandbox_adopt.h). */
#include "adapter/pause/sandbox_adopt.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapter/pause/pause_record.h"
#include "adapter/pause/sandbox_pause.h"
#include "adapter/process/process_pump.h"
#include "adapter/process/process_saved.h"
#include "adapter/process/process_table.h"
#include "adapter/sandbox/sandbox_ports.h"
#include "common/cleanup.h"
#include "common/log.h"
#include "common/path.h"
#include "common/scodes.h"
#include "common/state_dir.h"

/* A record holds its processes' logs: two rings each, base64, for as
 * many processes as a sandbox may keep (running and exited). */
static size_t record_bound(const struct sbx_config *cfg)
{
	return (size_t)(1u << 20) +
	       (size_t)4 * cfg->max_background_per_sandbox * ((size_t)cfg->background_log_bytes * 4 / 3 + 65536);
}

/* Its published ports on the host ports it had; one taken meanwhile
 * gets another (the sandbox matters more than the number; list says). */
static int bind_ports(struct sbx_adapter *a, const char *id, json_t *recorded, struct sandbox_ports *p,
		      sbx_error_t *err)
{
	if (sandbox_ports_fresh(recorded, p, err) < 0)
		return -1;
	size_t i;
	json_t *e;
	json_array_foreach(recorded, i, e) {
		json_t *host = json_object_get(e, "host");
		p->v[i].host = json_is_integer(host) && json_integer_value(host) > 0 &&
					       json_integer_value(host) <= 65535
				       ? (uint16_t)json_integer_value(host)
				       : 0;
		struct sandbox_ports one = { .v = { p->v[i] }, .n = 1 };
		if (sandbox_ports_bind(&a->cfg->publish, &one, err) == 0) {
			p->v[i] = one.v[0];
			continue;
		}
		sbx_warn("sandbox %s: %s; publishing guest port %u on another", id, sbx_error_msg(*err), p->v[i].guest);
		sbx_error_free(err);
		one.v[0].host = 0;
		if (sandbox_ports_bind(&a->cfg->publish, &one, err) < 0) {
			sandbox_ports_close(p);
			return -1;
		}
		p->v[i] = one.v[0];
	}
	return 0;
}

/* One saved process into the table; a running one gets its pump. */
static void adopt_proc(struct sbx_adapter *a, struct sbx_sandbox *sb, json_t *rec, bool keep_alive)
{
	const struct sbx_backend_ops *ops = a->backend.ops;
	sbx_error_t err = NULL;
	struct bg_proc *p = bg_proc_from_saved(rec, a->cfg->background_log_bytes, &a->mem, &err);
	if (p == NULL || process_table_reserve(a->procs, sb->id, UINT32_MAX, &err) < 0) {
		sbx_warn("sandbox %s: a background process is lost: %s", sb->id, sbx_error_msg(err));
		sbx_error_free(&err);
		bg_proc_unref(p);
		return;
	}
	void *h = p->running ? ops->adopted_proc(sb->vm, p->pid) : NULL;
	if (h != NULL) {
		p->ops = ops;
		p->handle = h;
		sbx_registry_hold_fs(a->reg, sb);
		if (process_pump_start(a, sb, p, NULL, 0, keep_alive, &err) < 0) {
			sbx_warn("sandbox %s: background process %s: %s", sb->id, p->id, sbx_error_msg(err));
			sbx_error_free(&err);
			sbx_registry_fs_end(a->reg, sb);
			p->handle = NULL;
			ops->proc_free(h);
			h = NULL;
		}
	}
	/* Running in the record but without a stream in the VM's: it ended
	 * unseen, its status unknown. */
	if (h == NULL && p->running)
		bg_proc_exited(p, -1);
	process_table_add(a->procs, sb->id, p, a->cfg->max_background_per_sandbox);
	bg_proc_unref(p);
}

void sandbox_ids_free(struct sandbox_ids *ids)
{
	free(ids->v);
	*ids = (struct sandbox_ids){ NULL, 0, 0 };
}

static int ids_add(struct sandbox_ids *ids, const char *id)
{
	if (ids->n == ids->cap) {
		size_t cap = ids->cap > 0 ? ids->cap * 2 : 16;
		void *v = reallocarray(ids->v, cap, sizeof(*ids->v));
		if (v == NULL)
			return -1;
		ids->v = v;
		ids->cap = cap;
	}
	snprintf(ids->v[ids->n++], sizeof(ids->v[0]), "%s", id);
	return 0;
}

/* 1 adopted, 0 held by another daemon, -1 (err) left where it is. */
static int adopt_one(struct sbx_adapter *a, const char *dir, struct pause_record *r, struct sandbox_ids *resume,
		     sbx_error_t *err)
{
	const struct sbx_backend_ops *ops = a->backend.ops;
	struct sandbox_ports ports = { .n = 0 };
	if (r->sb.ports != NULL && bind_ports(a, r->sb.id, r->sb.ports, &ports, err) < 0)
		return -1;
	int fds[NET_MAX_PUBLISH];
	for (size_t i = 0; i < ports.n; i++)
		fds[i] = ports.v[i].fd;
	void *vm = ops->adopt(a->backend.ctx, dir, r->backend, fds, ports.n, err);
	if (vm == NULL) {
		sandbox_ports_close(&ports);
		return (*err)->errnum == EWOULDBLOCK ? (sbx_error_free(err), 0) : -1;
	}
	if (ports.n > 0) {
		json_decref(r->sb.ports);
		r->sb.ports = sandbox_ports_json(&a->cfg->publish, &ports);
	}
	sandbox_ports_close(&ports);
	struct sbx_sandbox *sb = sbx_registry_insert_paused(a->reg, &r->sb, vm, err);
	if (sb == NULL) {
		ops->forget(vm);
		return -1;
	}
	r->sb.ports = NULL; /* the record's now */
	if (r->keep_alive && process_table_keep_alive(a->procs, sb->id, err) < 0) {
		sbx_warn("sandbox %s: %s", sb->id, sbx_error_msg(*err));
		sbx_error_free(err);
	}
	size_t i;
	json_t *proc;
	json_array_foreach(r->procs, i, proc)
		adopt_proc(a, sb, proc, r->keep_alive);
	sbx_info("sandbox %s: paused state in %s adopted with %zu background process%s", sb->id, dir,
		 json_array_size(r->procs), json_array_size(r->procs) == 1 ? "" : "es");
	if (r->resume_next && resume != NULL && ids_add(resume, sb->id) < 0)
		sbx_warn("sandbox %s: out of memory; it stays paused until a call resumes it", sb->id);
	sbx_registry_release(a->reg, sb);
	return 1;
}

/* 1 adopted, 0 not (held elsewhere, or an unfinished pause removed). */
static int entry(struct sbx_adapter *a, const char *root, const char *name, struct sandbox_ids *resume)
{
	const struct sbx_backend_ops *ops = a->backend.ops;
	size_t len = strlen(name);
	bool lock = len > 5 && strcmp(name + len - 5, ".lock") == 0;
	cleanup_free char *dir = lock ? strndup(name, len - 5) : strdup(name);
	cleanup_free char *path = dir != NULL ? sbx_path_join(root, dir) : NULL;
	if (path == NULL)
		return 0;
	if (lock) {
		/* A lock left without its state (a daemon gone between the
		 * two removals): nothing to keep. */
		if (access(path, F_OK) < 0 && errno == ENOENT)
			ops->discard_paused(a->backend.ctx, path);
		return 0;
	}
	struct pause_record r;
	sbx_error_t err = NULL;
	int rc = pause_record_read(path, record_bound(a->cfg), &r, &err);
	if (rc == 1) {
		if (ops->discard_paused(a->backend.ctx, path))
			sbx_info("removed %s: a pause that never finished", path);
		return 0;
	}
	if (rc == 0 && (rc = adopt_one(a, path, &r, resume, &err)) >= 0) {
		pause_record_free(&r);
		return rc;
	}
	sbx_warn("paused sandbox in %s is not resumable and stays there: %s", path, sbx_error_msg(err));
	sbx_error_free(&err);
	pause_record_free(&r);
	return 0;
}

int sandbox_adopt_dir(struct sbx_adapter *a, const char *dir, sbx_error_t *err)
{
	struct pause_record r;
	int rc = pause_record_read(dir, record_bound(a->cfg), &r, err);
	if (rc == 1)
		return sbx_error_scode(err, SBX_S_VM_BOOT, "%s has no record of a paused sandbox", dir);
	if (rc == 0 && (rc = adopt_one(a, dir, &r, NULL, err)) == 0)
		rc = sbx_error_scode(err, SBX_S_VM_BOOT, "%s is held by another daemon", dir);
	pause_record_free(&r);
	return rc < 0 ? -1 : 0;
}

unsigned sandbox_adopt_paused(struct sbx_adapter *a, struct sandbox_ids *resume)
{
	const struct sbx_backend_ops *ops = a->backend.ops;
	if (ops == NULL || ops->adopt == NULL || a->procs == NULL)
		return 0;
	sbx_error_t err = NULL;
	cleanup_free char *root = sbx_state_subdir("paused", &err);
	if (root == NULL) {
		sbx_warn("paused sandboxes: %s", sbx_error_msg(err));
		sbx_error_free(&err);
		return 0;
	}
	DIR *d = opendir(root);
	if (d == NULL)
		return 0;
	unsigned n = 0;
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		if (strncmp(e->d_name, SANDBOX_PAUSED_PREFIX, strlen(SANDBOX_PAUSED_PREFIX)) == 0)
			n += (unsigned)entry(a, root, e->d_name, resume);
	}
	closedir(d);
	if (n > 0)
		sbx_info("found again %u paused sandbox%s an earlier daemon left", n, n == 1 ? "" : "es");
	return n;
}
