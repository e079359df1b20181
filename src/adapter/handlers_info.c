/* adapter::info, catalog::list and list: answered from memory, never
 * blocking on VM work (the router waits only 2 s for adapter::info). */
#include <stdio.h>

#include "adapter/adapter.h"
#include "adapter/handlers.h"
#include "adapter/request.h"
#include "adapter/sandbox/catalog.h"

int sbx_op_adapter_info(struct sbx_adapter *a, json_t *req, json_t **out)
{
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
	if (ext == NULL)
		return *out = NULL, -1;
	*out = json_pack("{s:s, s:s, s:{s:i, s:i}, s:o}", "adapter", SBX_WORKER_NAME, "adapter_version", SBX_VERSION,
			 "contract", "major", SBX_CONTRACT_MAJOR, "minor", SBX_CONTRACT_MINOR, "extensions", ext);
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
