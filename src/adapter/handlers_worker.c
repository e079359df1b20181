/* worker::*: Compose's worker VMs.  The dispatcher checks the token before
 * anything else, including the request's shape (contract §7.19), then hands
 * the request to the adapter's worker operations. */
#include "adapter/handlers.h"
#include "adapter/request.h"
#include "adapter/worker_auth.h"
#include "common/scodes.h"

/* An adapter without worker operations (the fuzz targets, `run`). */
#define NO_WORKER_VMS "Compose worker VMs (worker::*) are not supported by this sandbox-libkrun build"

/* The token, then the payload and its `worker`, then `fn` (NULL: S300). */
static int dispatch(struct sbx_adapter *a, json_t *req, json_t **out, sbx_op_fn fn)
{
	sbx_error_t err = NULL;
	const char *worker;
	if (worker_auth_check(a->worker_token, req, &err) < 0)
		return sbx_op_fail(&err, out);
	if (req_object(req, &err) < 0)
		return sbx_op_fail(&err, out);
	if (req_string(req, "worker", true, &worker, &err) < 0)
		return sbx_op_fail(&err, out);
	if (fn == NULL) {
		sbx_error_scode(&err, SBX_S_VM_BOOT, NO_WORKER_VMS);
		return sbx_op_fail(&err, out);
	}
	return fn(a, req, out);
}

#define OP(name)                                                                    \
	int sbx_op_worker_##name(struct sbx_adapter *a, json_t *req, json_t **out) \
	{                                                                           \
		return dispatch(a, req, out, a->workers != NULL ? a->workers->name : NULL); \
	}
OP(prepare)
OP(start)
OP(status)
OP(logs)
OP(stop)
OP(destroy)
