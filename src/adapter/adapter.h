/* The adapter: the state behind the 23 sandbox-libkrun::* functions and the
 * one entry point that runs a function on a JSON payload.  Nothing here
 * knows about WebSockets; serve.c binds these functions to the engine. */
#ifndef SBX_ADAPTER_ADAPTER_H
#define SBX_ADAPTER_ADAPTER_H

#include <jansson.h>

#include "adapter/backend.h"
#include "adapter/config/config.h"
#include "adapter/fs/fs_host.h"
#include "adapter/mem_budget.h"
#include "adapter/reaper.h"
#include "adapter/sandbox_registry.h"
#include "common/error.h"

#define SBX_WORKER_NAME "sandbox-libkrun"
#define SBX_CONTRACT_MAJOR 1
#define SBX_CONTRACT_MINOR 1
/* What create/run/exec/worker::* answer in an adapter without a backend. */
#define SBX_NO_VM_DETAIL "VM support is not built yet in this sandbox-libkrun build"

struct sbx_adapter;
struct worker_table;

/* The worker::* operations behind the dispatcher (handlers_worker.c), which
 * has checked the token and that `worker` is a string; serve
 * gives them (worker/worker_ops.h), and without them worker::* answer S300. */
struct sbx_worker_ops {
	int (*prepare)(struct sbx_adapter *a, json_t *req, json_t **out);
	int (*start)(struct sbx_adapter *a, json_t *req, json_t **out);
	int (*status)(struct sbx_adapter *a, json_t *req, json_t **out);
	int (*logs)(struct sbx_adapter *a, json_t *req, json_t **out);
	int (*stop)(struct sbx_adapter *a, json_t *req, json_t **out);
	int (*destroy)(struct sbx_adapter *a, json_t *req, json_t **out);
};

struct sbx_adapter {
	struct sbx_config *cfg; /* read-only after start */
	struct sbx_registry *reg;
	char *worker_token; /* III_SANDBOX_WORKER_TOKEN; NULL when unset or empty */
	struct sbx_backend backend; /* ops NULL until sbx_adapter_use_backend() */
	struct sbx_fs_host fs;      /* fs::* guest calls and channels; ops NULL: S300 */
	struct reaper reaper;
	struct sbx_mem_budget mem; /* what live VMs may take together */
	const struct sbx_worker_ops *workers; /* NULL: worker::* answer S300 */
	struct worker_table *worker_vms; /* the live worker VMs (worker/worker_table.h), owned by serve */
};

/* Same contract as engine_handler_fn: 0 with *out the result, or -1 with *out
 * the error body ({code, message}). */
typedef int (*sbx_op_fn)(struct sbx_adapter *a, json_t *req, json_t **out);

struct sbx_op {
	const char *op; /* "exec"; the function id is "sandbox-libkrun::exec" */
	const char *description;
	const char *request_schema;  /* JSON text */
	const char *response_schema; /* JSON text */
	sbx_op_fn fn;
};

/* The 23 functions of contract §1.2. */
const struct sbx_op *sbx_ops(size_t *n);
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

/* Helpers for the handlers: turn *err into the error body in *out, free it
 * and return -1. */
int sbx_op_fail(sbx_error_t *err, json_t **out);
int sbx_op_fail_run(sbx_error_t *err, const char *step, const char *sandbox_id, json_t **out);

#endif
