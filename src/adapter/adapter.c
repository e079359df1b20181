#include "adapter/adapter.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/scode.h"
#include "common/scodes.h"
#include "common/log.h"

/* memory_budget_mb, else MemTotal less the host's reserve. */
static uint64_t memory_budget(const struct sbx_config *cfg)
{
	if (cfg->memory_budget_mb > 0)
		return cfg->memory_budget_mb;
	uint64_t total;
	sbx_error_t err = NULL;
	if (sbx_host_memtotal_mib("/proc/meminfo", &total, &err) < 0) {
		sbx_warn("memory budget: %s; admitting sandboxes by count only (set memory_budget_mb)",
			 sbx_error_msg(err));
		sbx_error_free(&err);
		return UINT64_MAX;
	}
	return sbx_mem_default_budget_mib(total);
}

/* Says at start when the configured limits promise more than fits. */
static void check_capacity(const struct sbx_adapter *a)
{
	const struct sbx_config *cfg = a->cfg;
	uint64_t per = sbx_vm_cost_mib(cfg->default_memory_mb, sbx_config_tcg_cache_mib(cfg));
	uint64_t limit = a->mem.limit_mib;
	if (limit == UINT64_MAX)
		return;
	sbx_info("memory budget %" PRIu64 " MiB: %" PRIu64 " sandboxes of default_memory_mb %u (%" PRIu64
		 " MiB each with their VM)",
		 limit, limit / per, cfg->default_memory_mb, per);
	if ((uint64_t)cfg->max_concurrent_sandboxes * per > limit)
		sbx_warn("max_concurrent_sandboxes %u x %" PRIu64 " MiB (default_memory_mb %u + its VM) does not fit "
			 "memory_budget_mb %" PRIu64 ": creates past %" PRIu64 " such sandboxes fail with S400",
			 cfg->max_concurrent_sandboxes, per, cfg->default_memory_mb, limit, limit / per);
}

struct sbx_adapter *sbx_adapter_new(struct sbx_config *cfg, sbx_error_t *err)
{
	struct sbx_adapter *a = calloc(1, sizeof(*a));
	if (a == NULL) {
		sbx_config_free(cfg);
		return sbx_error_errno(err, ENOMEM, "adapter"), NULL;
	}
	a->cfg = cfg;
	sbx_mem_budget_init(&a->mem, memory_budget(cfg));
	a->reg = sbx_registry_new(err);
	const char *token = getenv("III_SANDBOX_WORKER_TOKEN");
	if (token != NULL && token[0] != '\0')
		a->worker_token = strdup(token);
	if (a->reg == NULL || (token != NULL && token[0] != '\0' && a->worker_token == NULL)) {
		if (a->reg != NULL)
			sbx_error_errno(err, ENOMEM, "adapter");
		sbx_adapter_free(a);
		return NULL;
	}
	return a;
}

void sbx_adapter_free(struct sbx_adapter *a)
{
	if (a == NULL)
		return;
	reaper_stop(&a->reaper);
	if (a->reg != NULL) {
		unsigned n = reaper_scan(a, true);
		if (n > 0)
			sbx_info("stopped %u sandbox%s", n, n == 1 ? "" : "es");
	}
	if (a->worker_token != NULL) {
		explicit_bzero(a->worker_token, strlen(a->worker_token));
		free(a->worker_token);
	}
	sbx_registry_free(a->reg);
	sbx_mem_budget_destroy(&a->mem);
	sbx_config_free(a->cfg);
	free(a);
}

int sbx_adapter_use_backend(struct sbx_adapter *a, const struct sbx_backend_ops *ops, void *ctx,
			    sbx_error_t *err)
{
	a->backend = (struct sbx_backend){ ops, ctx };
	check_capacity(a);
	return reaper_start(&a->reaper, a, err);
}

const struct sbx_op *sbx_op_find(const char *op)
{
	size_t n;
	const struct sbx_op *ops = sbx_ops(&n);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(ops[i].op, op) == 0)
			return &ops[i];
	}
	return NULL;
}

/* The body used when even the error body cannot be built. */
static json_t *oom_body(void)
{
	return json_pack("{s:s, s:s}", "code", "invocation_failed", "message", "out of memory");
}

/* The function sbx_adapter_call runs on this thread, named in the error of
 * a failure that gave no cause. */
static _Thread_local const char *current_op;

/* Every failure says why.  One without an error, or with an empty message,
 * is a bug of the code that failed: it becomes an internal error naming the
 * function, logged loudly so that it is found, never an empty detail. */
static void ensure_cause(sbx_error_t *err)
{
	if (*err != NULL && sbx_error_msg(*err)[0] != '\0')
		return;
	const char *op = current_op != NULL ? current_op : "(outside a call)";
	char scode[sizeof((*err)->scode)] = "";
	int errnum = 0;
	if (*err != NULL) {
		memcpy(scode, (*err)->scode, sizeof(scode));
		errnum = (*err)->errnum;
	}
	sbx_err("BUG: %s::%s failed without a cause (error %s, S-code \"%s\", errno %d)", SBX_WORKER_NAME, op,
		*err != NULL ? "with an empty message" : "not set", scode, errnum);
	sbx_error_scode(err, scode[0] != '\0' ? scode : SBX_S_VM_BOOT,
			"internal error: %s::%s failed without giving a cause (a bug of sandbox-libkrun: its log "
			"says where)",
			SBX_WORKER_NAME, op);
}

int sbx_op_fail_run(sbx_error_t *err, const char *step, const char *sandbox_id, json_t **out)
{
	ensure_cause(err);
	*out = sbx_error_body_from_error(*err, step, sandbox_id);
	sbx_error_free(err);
	if (*out == NULL)
		*out = oom_body();
	return -1;
}

int sbx_op_fail(sbx_error_t *err, json_t **out)
{
	return sbx_op_fail_run(err, NULL, "", out);
}

int sbx_adapter_call(struct sbx_adapter *a, const char *op, json_t *req, json_t **out)
{
	*out = NULL;
	const struct sbx_op *o = sbx_op_find(op);
	if (o == NULL) {
		*out = json_pack("{s:s, s:s}", "code", "function_not_found", "message", "unknown sandbox-libkrun function");
		return -1;
	}
	const char *outer = current_op;
	current_op = o->op;
	int rc = o->fn(a, req, out);
	if (rc == 0 && *out == NULL) {
		sbx_error_t err = NULL;
		sbx_error_set(&err, ENOMEM, "out of memory building the reply");
		rc = sbx_op_fail(&err, out);
	} else if (rc < 0 && *out == NULL) {
		sbx_error_t err = NULL;
		rc = sbx_op_fail(&err, out);
	}
	current_op = outer;
	return rc;
}
