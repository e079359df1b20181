/* create, exec and stop: request decoding and the shape checks the
 * contract orders before any sandbox is looked up (§7.3, §7.4, §7.5); the
 * lifecycle itself is in sandbox_*.c. */
#include <errno.h>
#include <stdlib.h>

#include "adapter/handlers.h"
#include "adapter/pause/sandbox_pause.h"
#include "adapter/process/process_start.h"
#include "adapter/process/process_table.h"
#include "adapter/request.h"
#include "adapter/sandbox/env.h"
#include "adapter/sandbox/exec_shape.h"
#include "adapter/sandbox/exec_stream.h"
#include "adapter/sandbox/sandbox.h"
#include "adapter/sandbox/sandbox_network.h"
#include "adapter/snapshot/sandbox_snapshot.h"
#include "common/cleanup_json.h"
#include "common/log.h"
#include "common/scodes.h"

static int decode_create(json_t *req, struct sandbox_create_args *c, sbx_error_t *err)
{
	if (req_object(req, err) < 0)
		return -1;
	if (req_string(req, "image", true, &c->image, err) < 0)
		return -1;
	if (req_u32_opt(req, "cpus", &c->has_cpus, &c->cpus, err) < 0)
		return -1;
	if (req_u32_opt(req, "memory_mb", &c->has_memory, &c->memory_mb, err) < 0)
		return -1;
	if (req_string(req, "name", false, &c->name, err) < 0)
		return -1;
	if (sandbox_network_decode(req, c, err) < 0)
		return -1;
	if (sandbox_ports_decode(req, &c->ports, err) < 0)
		return -1;
	if (req_u64(req, "idle_timeout_secs", 0, &c->idle_timeout_secs, err) < 0)
		return -1;
	if (env_decode(req, "env", &c->env, err) < 0)
		return -1;
	json_t *idle = json_object_get(req, "idle_timeout_secs");
	c->has_idle = idle != NULL && !json_is_null(idle);
	return 0;
}

/* create with `snapshot` (issue 39): the snapshot gives the image, shape,
 * network and environment; what would change them is refused. */
static int decode_from_snapshot(json_t *req, struct sandbox_create_args *c, const char **snapshot, sbx_error_t *err)
{
	static const char *const refused[] = { "image", "env", "network", "ports" };
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		json_t *v = json_object_get(req, refused[i]);
		if (v != NULL && !json_is_null(v))
			return sbx_error_scode(err, SBX_S_INVALID_REQUEST,
					       i == 0 ? "give one of `image` and `snapshot`, not both"
						      : "`%s` cannot be given with `snapshot`: a sandbox created from a "
							"snapshot has the snapshot's",
					       refused[i]);
	}
	if (req_string(req, "snapshot", true, snapshot, err) < 0 ||
	    req_u32_opt(req, "cpus", &c->has_cpus, &c->cpus, err) < 0 ||
	    req_u32_opt(req, "memory_mb", &c->has_memory, &c->memory_mb, err) < 0 ||
	    req_string(req, "name", false, &c->name, err) < 0 ||
	    req_u64(req, "idle_timeout_secs", 0, &c->idle_timeout_secs, err) < 0)
		return -1;
	json_t *idle = json_object_get(req, "idle_timeout_secs");
	c->has_idle = idle != NULL && !json_is_null(idle);
	return 0;
}

static int create_from_snapshot(struct sbx_adapter *a, json_t *req, bool keep_alive, json_t **out)
{
	sbx_error_t err = NULL;
	struct sandbox_create_args c = { 0 };
	const char *snapshot;
	char id[SBX_UUID_STRLEN + 1];
	char *image = NULL;
	if (decode_from_snapshot(req, &c, &snapshot, &err) < 0 ||
	    sandbox_create_from_snapshot(a, &c, snapshot, keep_alive, id, &image, &err) < 0)
		return sbx_op_fail(&err, out);
	*out = json_pack("{s:s, s:s, s:s}", "sandbox_id", id, "image", image, "snapshot_id", snapshot);
	free(image);
	if (*out == NULL) {
		sbx_error_errno(&err, ENOMEM, "create reply");
		return sbx_op_fail(&err, out);
	}
	return 0;
}

int sbx_op_create(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	struct sandbox_create_args c = { 0 };
	char id[SBX_UUID_STRLEN + 1];
	bool keep_alive;
	json_t *snapshot = json_object_get(req, "snapshot");
	if (json_is_object(req) && snapshot != NULL && !json_is_null(snapshot)) {
		if (req_bool(req, "keep_alive_while_running", false, &keep_alive, &err) < 0)
			return sbx_op_fail(&err, out);
		return create_from_snapshot(a, req, keep_alive, out);
	}
	if (decode_create(req, &c, &err) < 0)
		return sbx_op_fail(&err, out);
	if (req_bool(req, "keep_alive_while_running", false, &keep_alive, &err) < 0)
		return sbx_op_fail(&err, out);
	if (sandbox_create(a, &c, id, &err) < 0)
		return sbx_op_fail(&err, out);
	if (keep_alive && process_table_keep_alive(a->procs, id, &err) < 0) {
		sbx_warn("create: keep_alive_while_running not kept for %s: %s", id, sbx_error_msg(err));
		sbx_error_free(&err);
	}
	*out = json_pack("{s:s, s:s}", "sandbox_id", id, "image", c.image);
	/* Only a create with ports has the field: others keep the contract's reply. */
	if (c.ports.n > 0 && *out != NULL &&
	    json_object_set_new(*out, "ports", sandbox_ports_json(&a->cfg->publish, &c.ports)) < 0) {
		json_decref(*out);
		*out = NULL;
	}
	if (*out == NULL) {
		sbx_error_errno(&err, ENOMEM, "create reply");
		return sbx_op_fail(&err, out);
	}
	return 0;
}

/* The exec request's fields that are resolved before the lookup; the
 * strings and arrays are borrowed from the request. */
struct exec_fields {
	const char *id, *cmd;
	json_t *args, *argv, *env;
};

static int decode_exec(json_t *req, struct exec_fields *f, struct sandbox_exec_args *x, sbx_error_t *err)
{
	if (req_object(req, err) < 0)
		return -1;
	if (req_string(req, "sandbox_id", true, &f->id, err) < 0)
		return -1;
	if (req_string(req, "cmd", false, &f->cmd, err) < 0)
		return -1;
	if (req_string_array(req, "args", &f->args, err) < 0)
		return -1;
	if (req_string_array(req, "argv", &f->argv, err) < 0)
		return -1;
	if (req_string(req, "stdin", false, &x->stdin_b64, err) < 0)
		return -1;
	if (env_decode(req, "env", &f->env, err) < 0)
		return -1;
	if (req_u64(req, "timeout_ms", 300000, &x->timeout_ms, err) < 0)
		return -1;
	if (exec_stream_decode(req, &x->stream, err) < 0)
		return -1;
	return req_string(req, "workdir", false, &x->workdir, err);
}

int sbx_op_exec(struct sbx_adapter *a, json_t *req, json_t **out)
{
	return sbx_op_exec_live(a, req, NULL, out);
}

int sbx_op_exec_live(struct sbx_adapter *a, json_t *req, const struct sbx_exec_live *live, json_t **out)
{
	sbx_error_t err = NULL;
	struct exec_fields f = { 0 };
	struct sandbox_exec_args x = { 0 };
	if (live != NULL) {
		x.on_output = live->on_output;
		x.caller_gone = live->caller_gone;
		x.output_ud = live->ud;
	}
	bool background;
	if (decode_exec(req, &f, &x, &err) < 0 || req_bool(req, "background", false, &background, &err) < 0)
		return sbx_op_fail(&err, out);
	json_t *stream = json_object_get(req, "stream");
	if (background && stream != NULL && !json_is_null(stream)) {
		sbx_error_scode(&err, SBX_S_INVALID_REQUEST, "`stream` and `background` are exclusive: a background "
			"process's output goes to its logs (process::logs, with `follow` to stream them)");
		return sbx_op_fail(&err, out);
	}

	char uuid[SBX_UUID_STRLEN + 1];
	if (req_sandbox_uuid(f.id, uuid, &err) < 0)
		return sbx_op_fail(&err, out);
	if ((x.argv = exec_shape_resolve(f.cmd, f.args, f.argv, &err)) == NULL)
		return sbx_op_fail(&err, out);
	x.env = env_resolve(f.env, &err);
	cleanup_json json_t *printed = NULL;
	*out = NULL;
	/* A paused sandbox is resumed first (auto_resume), or refused. */
	if (x.env != NULL && sandbox_wake(a, uuid, &err) == 0)
		*out = background ? process_exec_background(a, uuid, &x, &err) : sandbox_exec(a, uuid, &x, &printed, &err);
	json_decref(x.argv);
	json_decref(x.env);
	return *out != NULL ? 0 : sbx_op_fail_extra(&err, NULL, "", printed, out);
}

int sbx_op_stop(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *id;
	bool wait;
	char uuid[SBX_UUID_STRLEN + 1];
	if (req_object(req, &err) < 0)
		return sbx_op_fail(&err, out);
	if (req_string(req, "sandbox_id", true, &id, &err) < 0)
		return sbx_op_fail(&err, out);
	/* `wait` is accepted and ignored: stop is always synchronous. */
	if (req_bool(req, "wait", false, &wait, &err) < 0)
		return sbx_op_fail(&err, out);
	if (req_sandbox_uuid(id, uuid, &err) < 0)
		return sbx_op_fail(&err, out);
	if (sandbox_stop(a, uuid, &err) < 0)
		return sbx_op_fail(&err, out);
	*out = json_pack("{s:s, s:b}", "sandbox_id", uuid, "stopped", 1);
	return 0;
}
