/* worker::*: Compose's worker VMs.  The token is checked before anything
 * else, including the request's shape (contract §7.19). */
#include "adapter/handlers.h"
#include "adapter/request.h"
#include "adapter/worker_auth.h"
#include "common/scodes.h"

/* Compose's worker VMs need virtiofs shares and persistent data disks that
 * this build does not provide yet: say so rather than pretend. */
#define NO_WORKER_VMS "Compose worker VMs (worker::*) are not supported by this sandbox-libkrun build yet"

/* Every worker::* function: the token, then the shape, then S300. */
int sbx_op_worker(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *worker;
	if (worker_auth_check(a->worker_token, req, &err) < 0)
		return sbx_op_fail(&err, out);
	if (req_object(req, &err) < 0)
		return sbx_op_fail(&err, out);
	if (req_string(req, "worker", true, &worker, &err) < 0)
		return sbx_op_fail(&err, out);
	sbx_error_scode(&err, SBX_S_VM_BOOT, NO_WORKER_VMS);
	return sbx_op_fail(&err, out);
}
