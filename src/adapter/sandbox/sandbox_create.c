/* create (contract §7.3). */
#include <errno.h>
#include <string.h>

#include "adapter/sandbox/catalog.h"
#include "adapter/sandbox/env.h"
#include "adapter/sandbox/sandbox.h"
#include "adapter/sandbox/sandbox_network.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/scodes.h"
#include "common/uuid.h"

/* How long a create that does not fit waits for sandboxes being stopped:
 * a stop takes QEMU's quit, or its kill after a grace. */
#define RELEASE_WAIT_MS 30000

/* Checks that need no slot: a bad request never consumes capacity. */
static int check_request(const struct sandbox_create_args *c, uint32_t cpus, uint32_t mem, sbx_error_t *err)
{
	if (cpus == 0)
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "cpus must be at least 1");
	if (mem == 0)
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "memory_mb must be at least 1");
	/* The operator's references take ids before names (control_resolve);
	 * a name that reads as an id would still mislead whoever reads `ps`
	 * or `list`, and could not be used as a reference. */
	if (c->name != NULL && sbx_uuid_like(c->name))
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST,
				       "`name` '%.64s' looks like a sandbox id (only hex digits and dashes, or a "
				       "UUID): give it another character, e.g. 'sb-%.64s'",
				       c->name, c->name);
	return 0;
}

/* The create shows in the operator's view (sbx_registry_rows) from here
 * until it becomes a record or fails. */
static int boot_and_register(struct sbx_adapter *a, struct sandbox_create_args *c, const char *ref,
			     uint32_t cpus, uint32_t mem, uint64_t cost, json_t *env, char id[SBX_UUID_STRLEN + 1],
			     sbx_error_t *err)
{
	const struct sbx_backend *be = &a->backend;
	int64_t t0 = sbx_now_ms();
	if (be->ops == NULL)
		return sbx_error_scode(err, SBX_S_VM_BOOT, SBX_NO_VM_DETAIL);
	if (sbx_uuid_v4(id) < 0)
		return sbx_error_scode(err, SBX_S_VM_BOOT, "cannot generate a sandbox id");
	if (sbx_registry_creating_begin(a->reg, id, c->name, c->image, cpus, mem, c->network, err) < 0)
		return -1;
	char **net_args = NULL;
	if (c->network && sandbox_network_prepare(a->cfg, c, id, env, &net_args, err) < 0)
		goto fail;
	if (c->ports.n > 0 && (net_args = sandbox_ports_helper_args(&a->cfg->publish, &c->ports, net_args, id)) == NULL) {
		sbx_error_errno(err, ENOMEM, "network helper arguments");
		goto fail;
	}
	int publish[NET_MAX_PUBLISH];
	for (size_t i = 0; i < c->ports.n; i++)
		publish[i] = c->ports.v[i].fd;
	struct sbx_boot_request br = { c->image, ref, cpus, mem, env, net_args, publish, c->ports.n };
	void *vm = be->ops->boot(be->ctx, &br, err);
	net_args_free(net_args);
	if (vm == NULL)
		goto fail;
	uint64_t idle = c->has_idle ? c->idle_timeout_secs : a->cfg->default_idle_timeout_secs;
	json_t *ports = NULL;
	if (c->ports.n > 0 && (ports = sandbox_ports_json(&a->cfg->publish, &c->ports)) == NULL) {
		sbx_error_errno(err, ENOMEM, "sandbox record");
		be->ops->stop(vm);
		goto fail;
	}
	if (sbx_registry_insert_vm(a->reg, id, c->name, c->image, idle, vm, cost, err) < 0) {
		json_decref(ports);
		be->ops->stop(vm);
		goto fail;
	}
	if (ports != NULL)
		sbx_registry_set_ports(a->reg, id, ports);
	const char *boot = be->ops->boot_mode != NULL ? be->ops->boot_mode(vm) : NULL;
	struct sbx_log_field f[] = {
		SBX_LF_STR("event", "create"),	      SBX_LF_STR("sandbox_id", id),
		SBX_LF_STR("image", c->image),	      SBX_LF_STR("boot", boot),
		SBX_LF_INT("ready_ms", sbx_now_ms() - t0), SBX_LF_INT("cpus", cpus),
		SBX_LF_INT("memory_mb", mem),	      SBX_LF_INT("network", c->network),
	};
	sbx_log_kv(SBX_LOG_INFO, f, "sandbox %s created", id);
	return 0;
fail:
	sbx_registry_creating_end(a->reg, id);
	return -1;
}

int sandbox_create(struct sbx_adapter *a, struct sandbox_create_args *c, char id[SBX_UUID_STRLEN + 1],
		   sbx_error_t *err)
{
	const struct sbx_config *cfg = a->cfg;
	uint32_t cpus = c->has_cpus ? c->cpus : cfg->default_cpus;
	uint32_t mem = c->has_memory ? c->memory_mb : cfg->default_memory_mb;
	if (check_request(c, cpus, mem, err) < 0)
		return -1;
	/* Bound before anything is taken: a taken port creates nothing.  The
	 * VM keeps copies of the listeners for its network helper. */
	if (sandbox_ports_bind(&cfg->publish, &c->ports, err) < 0)
		return -1;
	if (sbx_registry_reserve(a->reg, cfg->max_concurrent_sandboxes, err) < 0) {
		sandbox_ports_close(&c->ports);
		return -1;
	}
	int rc = -1;
	uint64_t cost = 0;
	json_t *env = NULL;
	const char *ref = sbx_catalog_resolve(cfg, c->image, err);
	if (ref == NULL)
		goto out;
	const struct sbx_image_caps *caps = sbx_config_caps(cfg, c->image);
	if (caps != NULL && cpus > caps->max_cpus) {
		sbx_error_scode(err, SBX_S_LIMIT, "cpus=%u exceeds per-image cap %u", cpus, caps->max_cpus);
		goto out;
	}
	if (caps != NULL && mem > caps->max_memory_mb) {
		sbx_error_scode(err, SBX_S_LIMIT, "memory_mb=%u exceeds per-image cap %u", mem, caps->max_memory_mb);
		goto out;
	}
	if ((env = env_resolve(c->env, err)) == NULL)
		goto out;
	uint64_t need = sbx_config_vm_cost_mib(cfg, mem, cpus) + (c->network ? SBX_NET_HELPER_MIB : 0);
	if (a->backend.ops != NULL && a->backend.ops->templates_mib != NULL)
		sbx_mem_budget_set_templates(&a->mem, a->backend.ops->templates_mib(a->backend.ctx));
	if (sbx_mem_budget_take(&a->mem, need, mem, err) < 0) {
		/* Sandboxes being stopped (a run that replied, a stop, the
		 * reaper, a dead VM) left `list` but hold memory they are about
		 * to give back: wait for them, then ask once more. */
		sbx_error_free(err);
		(void)sbx_mem_budget_wait_released(&a->mem, RELEASE_WAIT_MS);
		if (sbx_mem_budget_take(&a->mem, need, mem, err) < 0)
			goto out;
	}
	cost = need;
	/* The insert turns the reservation into the record, which then holds
	 * the memory committed. */
	rc = boot_and_register(a, c, ref, cpus, mem, cost, env, id, err);
out:
	sandbox_ports_close(&c->ports);
	json_decref(env);
	if (rc < 0) {
		if (cost > 0)
			sbx_mem_budget_give(&a->mem, cost);
		sbx_registry_unreserve(a->reg);
	}
	return rc;
}
