/* The six worker::* operations (contract §7.19, docs/workers.md "Compose worker
 * VMs").  The dispatcher (adapter/handlers_worker.c) calls them after the
 * token check, with `req` an object whose `worker` is a string; each
 * answers like an engine handler: 0 with *out the result, -1 with *out the
 * error body.  serve hands worker_ops_vm to the adapter. */
#ifndef SBX_WORKER_OPS_H
#define SBX_WORKER_OPS_H

#include "adapter/adapter_state.h"
#include "adapter/scode.h"

int worker_op_prepare(struct sbx_adapter *a, json_t *req, json_t **out);
int worker_op_start(struct sbx_adapter *a, json_t *req, json_t **out);
int worker_op_status(struct sbx_adapter *a, json_t *req, json_t **out);
int worker_op_logs(struct sbx_adapter *a, json_t *req, json_t **out);
int worker_op_stop(struct sbx_adapter *a, json_t *req, json_t **out);
int worker_op_destroy(struct sbx_adapter *a, json_t *req, json_t **out);

extern const struct sbx_worker_ops worker_ops_vm;

#endif
