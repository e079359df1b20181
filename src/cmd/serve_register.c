#include "cmd/serve_register.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "adapter/adapter.h"
#include "adapter/scode.h"
#include "common/scodes.h"

/* Calls that take milliseconds: they run in a pool of their own, so long
 * execs and file transfers filling theirs never delay them. */
static bool quick_op(const char *op)
{
	static const char *const quick[] = { "adapter::info", "catalog::list", "list", "stop", "process::list",
					     "process::signal", "terminal::resize" };
	for (size_t i = 0; i < sizeof(quick) / sizeof(quick[0]); i++) {
		if (strcmp(op, quick[i]) == 0)
			return true;
	}
	return false;
}

json_t *serve_busy_error(const char *message)
{
	sbx_error_t err = NULL;
	sbx_error_scode(&err, SBX_S_LIMIT, "%s", message);
	json_t *out = NULL;
	sbx_op_fail(&err, &out);
	return out;
}

static int register_table(struct engine *e, engine_handler_fn handler, void *ud, const struct sbx_op *ops, size_t n,
			  sbx_error_t *err)
{
	for (size_t i = 0; i < n; i++) {
		char id[128];
		snprintf(id, sizeof(id), "%s::%s", SBX_WORKER_NAME, ops[i].op);
		json_error_t jerr;
		json_t *req = json_loads(ops[i].request_schema, 0, &jerr);
		json_t *resp = json_loads(ops[i].response_schema, 0, &jerr);
		struct engine_function fn = { id, ops[i].description, req, resp, handler, ud, quick_op(ops[i].op) };
		int rc = req != NULL && resp != NULL ? engine_add_function(e, &fn, err)
						     : sbx_error_set(err, EINVAL, "schema of %s: %s", id, jerr.text);
		json_decref(req);
		json_decref(resp);
		if (rc < 0)
			return sbx_error_prefix(err, "register %s", id);
	}
	return 0;
}

int serve_register_ops(struct engine *e, engine_handler_fn handler, void *userdata, sbx_error_t *err)
{
	size_t n, m;
	const struct sbx_op *ops = sbx_ops(&n);
	const struct sbx_op *ext = sbx_op_extensions(&m);
	if (register_table(e, handler, userdata, ops, n, err) < 0)
		return -1;
	return register_table(e, handler, userdata, ext, m, err);
}
