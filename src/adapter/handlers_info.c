/* adapter::info, catalog::list and list: answered from memory, never
 * blocking on VM work (the router waits only 2 s for adapter::info). */
#include <errno.h>
#include <stdio.h>

#include "adapter/adapter.h"
#include "adapter/handlers.h"
#include "adapter/request.h"
#include "adapter/sandbox/catalog.h"

/* What placement across several daemons needs (issue 28), or NULL
 * without VMs (nothing to place there).  memory_mib.committed is what a
 * create is checked against: the sandboxes' and worker VMs' worst cases
 * plus the templates' RAM as the last create measured it (measuring it
 * here could wait on a template being loaded). */
static json_t *capacity(struct sbx_adapter *a, sbx_error_t *err)
{
	const struct sbx_config *cfg = a->cfg;
	struct sbx_backend_capacity c = { 0 };
	if (a->backend.ops->capacity != NULL && a->backend.ops->capacity(a->backend.ctx, &c, err) < 0)
		return NULL;
	if (c.images_cached == NULL && (c.images_cached = json_array()) == NULL)
		return sbx_error_errno(err, ENOMEM, "adapter::info"), NULL;
	uint64_t committed, budget;
	sbx_mem_budget_read(&a->mem, &committed, &budget);
	/* A create without memory_mb (nor network) adds this to committed. */
	uint64_t sandbox_default = sbx_config_vm_cost_mib(cfg, cfg->default_memory_mb, cfg->default_cpus);
	json_t *out = json_pack("{s:{s:I, s:I}, s:{s:I, s:I, s:I}, s:o, s:I, s:b, s:b}", "sandboxes", "live",
				(json_int_t)sbx_registry_used(a->reg), "max", (json_int_t)cfg->max_concurrent_sandboxes,
				"memory_mib", "committed", (json_int_t)committed, "budget", (json_int_t)budget,
				"sandbox_default", (json_int_t)sandbox_default, "images_cached", c.images_cached,
				"pool_ready", (json_int_t)c.pool_ready, "standby_ready", c.standby_ready, "kvm", c.kvm);
	if (out == NULL)
		return sbx_error_errno(err, ENOMEM, "adapter::info"), NULL;
	return out;
}

int sbx_op_adapter_info(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	json_t *cap = NULL;
	if (a->backend.ops != NULL && (cap = capacity(a, &err)) == NULL)
		return sbx_op_fail(&err, out);
	/* Any payload is accepted: the function takes no fields. */
	json_t *ext = json_array();
	size_t n;
	const struct sbx_op *ops = sbx_op_extensions(&n);
	for (size_t i = 0; ext != NULL && i < n; i++) {
		char id[128];
		snprintf(id, sizeof(id), "%s::%s", SBX_WORKER_NAME, ops[i].op);
		if (json_array_append_new(ext, json_string(id)) < 0)
			json_decref(ext), ext = NULL;
	}
	if (ext == NULL) {
		json_decref(cap);
		return *out = NULL, -1;
	}
	*out = json_pack("{s:s, s:s, s:{s:i, s:i}, s:o}", "adapter", SBX_WORKER_NAME, "adapter_version", SBX_VERSION,
			 "contract", "major", SBX_CONTRACT_MAJOR, "minor", SBX_CONTRACT_MINOR, "extensions", ext);
	if (cap != NULL && (*out == NULL || json_object_set_new(*out, "capacity", cap) < 0)) {
		json_decref(*out);
		return *out = NULL, -1;
	}
	return 0;
}

int sbx_op_catalog_list(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	if (req_object(req, &err) < 0)
		return sbx_op_fail(&err, out);
	*out = sbx_catalog_list(a->cfg);
	return 0;
}

int sbx_op_list(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	if (req_object(req, &err) < 0)
		return sbx_op_fail(&err, out);
	*out = sbx_registry_list(a->reg, a->cfg->max_concurrent_exec_per_sandbox);
	return 0;
}
