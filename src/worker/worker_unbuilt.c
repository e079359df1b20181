/* The worker::* operations this build does not have yet: they say so
 * rather than pretend. */
#include "worker/worker_ops.h"

#include "common/scodes.h"

#define NOT_YET "worker VMs cannot be prepared by this sandbox-libkrun build yet"

int worker_op_prepare(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	sbx_error_scode(&err, SBX_S_VM_BOOT, NOT_YET);
	return sbx_op_fail(&err, out);
}
