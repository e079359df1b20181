/* The adapter: the state behind the 23 sandbox-libkrun::* functions and the
 * one entry point that runs a function on a JSON payload.  Nothing here
 * knows about WebSockets; serve.c binds these functions to the engine.
 * adapter.c makes and frees it; ops.c, the front door, holds the table of
 * functions and runs them. */
#ifndef SBX_ADAPTER_ADAPTER_H
#define SBX_ADAPTER_ADAPTER_H

#include <jansson.h>

#include "adapter/adapter_state.h"
#include "common/error.h"

/* The 23 functions of contract §1.2. */
const struct sbx_op *sbx_ops(size_t *n);
/* The functions beyond them an issue named (ops_ext.c). */
const struct sbx_op *sbx_op_extensions(size_t *n);
/* Either kind, by name ("fs::ls", "process::list"). */
const struct sbx_op *sbx_op_find(const char *op);

/* Takes ownership of `cfg`; reads III_SANDBOX_WORKER_TOKEN. */
struct sbx_adapter *sbx_adapter_new(struct sbx_config *cfg, sbx_error_t *err);
/* Stops the reaper and every sandbox VM, then frees. */
void sbx_adapter_free(struct sbx_adapter *a);
/* Gives the adapter its VMs and starts the idle reaper. */
int sbx_adapter_use_backend(struct sbx_adapter *a, const struct sbx_backend_ops *ops, void *ctx,
			    sbx_error_t *err);
/* Runs operation `op` ("fs::ls") on `req` (borrowed, may be NULL). */
int sbx_adapter_call(struct sbx_adapter *a, const char *op, json_t *req, json_t **out);
/* sbx_adapter_call(a, "exec", req, out) for a caller on a connection of
 * its own (struct sbx_exec_live): the output as it comes, the command
 * ended when the caller goes away; the reply is exec's all the same. */
int sbx_adapter_exec_live(struct sbx_adapter *a, json_t *req, const struct sbx_exec_live *live, json_t **out);

#endif
