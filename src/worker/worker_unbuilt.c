/* The worker::* operations this build does not have yet: they say so
 * rather than pretend. */
#include "worker/worker_ops.h"

#include "common/scodes.h"

#define NOT_YET "worker VMs cannot be started by this sandbox-libkrun build yet (worker::prepare works)"

static int not_yet(json_t **out)
{
	sbx_error_t err = NULL;
	sbx_error_scode(&err, SBX_S_VM_BOOT, NOT_YET);
	return sbx_op_fail(&err, out);
}

int worker_op_start(struct sbx_adapter *a, json_t *req, json_t **out)
{
	return not_yet(out);
}

int worker_op_status(struct sbx_adapter *a, json_t *req, json_t **out)
{
	return not_yet(out);
}

int worker_op_logs(struct sbx_adapter *a, json_t *req, json_t **out)
{
	return not_yet(out);
}

int worker_op_stop(struct sbx_adapter *a, json_t *req, json_t **out)
{
	return not_yet(out);
}

int worker_op_destroy(struct sbx_adapter *a, json_t *req, json_t **out)
{
	return not_yet(out);
}

int worker_op_prepare(struct sbx_adapter *a, json_t *req, json_t **out)
{
	return not_yet(out);
}
