/* create, run, exec and stop: request decoding and the checks the contract
 * orders before any VM work (§7.3, §7.4, §7.5, §7.7). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/catalog.h"
#include "adapter/env.h"
#include "adapter/exec_shape.h"
#include "adapter/handlers.h"
#include "adapter/request.h"
#include "common/base64.h"
#include "common/cleanup.h"

struct create_args {
	const char *image;
	bool has_cpus, has_memory;
	uint32_t cpus, memory_mb;
	json_t *env;
};

/* Steps 1-3 and 6 of create's error order, then the boot, which this build
 * cannot do yet: always -1 with *err set. */
static int create_sandbox(struct sbx_adapter *a, const struct create_args *c, sbx_error_t *err)
{
	const struct sbx_config *cfg = a->cfg;
	if (sbx_registry_reserve(a->reg, cfg->max_concurrent_sandboxes, err) < 0)
		return -1;
	uint32_t cpus = c->has_cpus ? c->cpus : cfg->default_cpus;
	uint32_t mem = c->has_memory ? c->memory_mb : cfg->default_memory_mb;
	const struct sbx_image_caps *caps;
	json_t *env = NULL;
	if (sbx_catalog_resolve(cfg, c->image, err) == NULL)
		goto out;
	caps = sbx_config_caps(cfg, c->image);
	if (caps != NULL && cpus > caps->max_cpus) {
		sbx_error_scode(err, "S400", "cpus=%u exceeds per-image cap %u", cpus, caps->max_cpus);
		goto out;
	}
	if (caps != NULL && mem > caps->max_memory_mb) {
		sbx_error_scode(err, "S400", "memory_mb=%u exceeds per-image cap %u", mem, caps->max_memory_mb);
		goto out;
	}
	env = env_resolve(c->env, err);
	if (env == NULL)
		goto out;
	sbx_error_scode(err, "S300", SBX_NO_VM_DETAIL);
out:
	json_decref(env);
	sbx_registry_unreserve(a->reg);
	return -1;
}

static int decode_create(json_t *req, struct create_args *c, sbx_error_t *err)
{
	const char *name;
	bool network;
	uint64_t idle;
	return req_object(req, err) < 0 || req_string(req, "image", true, &c->image, err) < 0 ||
			       req_u32_opt(req, "cpus", &c->has_cpus, &c->cpus, err) < 0 ||
			       req_u32_opt(req, "memory_mb", &c->has_memory, &c->memory_mb, err) < 0 ||
			       req_string(req, "name", false, &name, err) < 0 ||
			       req_bool(req, "network", false, &network, err) < 0 ||
			       req_u64(req, "idle_timeout_secs", 0, &idle, err) < 0 ||
			       env_decode(req, "env", &c->env, err) < 0
		       ? -1
		       : 0;
}

int sbx_op_create(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	struct create_args c = { 0 };
	if (decode_create(req, &c, &err) == 0)
		create_sandbox(a, &c, &err);
	return sbx_op_fail(&err, out);
}

static int decode_run_files(json_t *req, sbx_error_t *err)
{
	json_t *files = json_object_get(req, "files");
	if (files == NULL || json_is_null(files))
		return 0;
	if (!json_is_array(files))
		return req_type_error(files, "files", "a sequence of {path, content}", err);
	size_t i;
	json_t *f;
	json_array_foreach(files, i, f) {
		const char *s;
		if (!json_is_object(f))
			return req_type_error(f, "files", "a {path, content} map", err);
		if (req_string(f, "path", true, &s, err) < 0 || req_string(f, "content", true, &s, err) < 0)
			return -1;
	}
	return 0;
}

int sbx_op_run(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	struct create_args c = { 0 };
	const char *code, *lang, *stdin_b64;
	uint64_t timeout_ms;
	bool keep;
	if (req_object(req, &err) < 0 || req_string(req, "image", true, &c.image, &err) < 0 ||
	    req_string(req, "code", true, &code, &err) < 0 || req_string(req, "lang", true, &lang, &err) < 0 ||
	    decode_run_files(req, &err) < 0 || env_decode(req, "env", &c.env, &err) < 0 ||
	    req_string(req, "stdin", false, &stdin_b64, &err) < 0 ||
	    req_u64(req, "timeout_ms", 300000, &timeout_ms, &err) < 0 ||
	    req_bool(req, "keep_sandbox", false, &keep, &err) < 0)
		return sbx_op_fail(&err, out);
	/* run creates with the configured defaults: no cpus/memory overrides. */
	create_sandbox(a, &c, &err);
	return sbx_op_fail_run(&err, "create", "", out);
}

int sbx_op_exec(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *id, *cmd, *stdin_b64, *workdir;
	json_t *args, *argv, *env;
	uint64_t timeout_ms;
	if (req_object(req, &err) < 0 || req_string(req, "sandbox_id", true, &id, &err) < 0 ||
	    req_string(req, "cmd", false, &cmd, &err) < 0 || req_string_array(req, "args", &args, &err) < 0 ||
	    req_string_array(req, "argv", &argv, &err) < 0 || req_string(req, "stdin", false, &stdin_b64, &err) < 0 ||
	    env_decode(req, "env", &env, &err) < 0 || req_u64(req, "timeout_ms", 300000, &timeout_ms, &err) < 0 ||
	    req_string(req, "workdir", false, &workdir, &err) < 0)
		return sbx_op_fail(&err, out);

	char uuid[SBX_UUID_STRLEN + 1];
	if (req_sandbox_uuid(id, uuid, &err) < 0)
		return sbx_op_fail(&err, out);
	json_t *resolved = exec_shape_resolve(cmd, args, argv, &err);
	if (resolved == NULL)
		return sbx_op_fail(&err, out);
	json_decref(resolved);
	json_t *kv = env_resolve(env, &err);
	if (kv == NULL)
		return sbx_op_fail(&err, out);
	json_decref(kv);

	struct sbx_sandbox *sb = sbx_registry_exec_begin(a->reg, uuid, a->cfg->max_concurrent_exec_per_sandbox, &err);
	if (sb == NULL)
		return sbx_op_fail(&err, out);
	/* stdin is checked after admission (contract order); the slot is
	 * released on every path. */
	if (stdin_b64 != NULL) {
		size_t n;
		sbx_error_t berr = NULL;
		cleanup_free unsigned char *bytes = sbx_base64_decode(stdin_b64, strlen(stdin_b64), &n, &berr);
		if (bytes == NULL) {
			sbx_error_scode(&err, "S001", "stdin base64 decode: %s", sbx_error_msg(berr));
			sbx_error_free(&berr);
			sbx_registry_exec_end(a->reg, sb);
			return sbx_op_fail(&err, out);
		}
	}
	sbx_registry_exec_end(a->reg, sb);
	sbx_error_scode(&err, "S300", SBX_NO_VM_DETAIL);
	return sbx_op_fail(&err, out);
}

int sbx_op_stop(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *id;
	bool wait, was_stopped;
	char uuid[SBX_UUID_STRLEN + 1];
	/* `wait` is accepted and ignored: stop is always synchronous. */
	if (req_object(req, &err) < 0 || req_string(req, "sandbox_id", true, &id, &err) < 0 ||
	    req_bool(req, "wait", false, &wait, &err) < 0 || req_sandbox_uuid(id, uuid, &err) < 0 ||
	    sbx_registry_claim_stop(a->reg, uuid, &was_stopped, &err) < 0)
		return sbx_op_fail(&err, out);
	/* A record without a VM has nothing to kill; when the reaper claimed it
	 * first, it also removes it. */
	if (!was_stopped)
		sbx_registry_remove(a->reg, uuid);
	*out = json_pack("{s:s, s:b}", "sandbox_id", uuid, "stopped", 1);
	return 0;
}
