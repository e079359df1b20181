/* What the handlers see of the adapter: its state (the registry, the three
 * ports, the reaper, the memory budget) and the shape of one operation.
 * The handlers include this, not adapter.h, so the front door (ops.c,
 * which names every handler) stays on top of them. */
#ifndef SBX_ADAPTER_ADAPTER_STATE_H
#define SBX_ADAPTER_ADAPTER_STATE_H

#include <jansson.h>

#include "adapter/backend.h"
#include "adapter/config/config.h"
#include "adapter/fs_backend.h"
#include "adapter/mem_budget.h"
#include "adapter/reaper_state.h"
#include "adapter/sandbox_registry.h"
#include "adapter/stream_backend.h"
#include "adapter/worker_backend.h"

#define SBX_WORKER_NAME "sandbox-libkrun"
#define SBX_CONTRACT_MAJOR 1
#define SBX_CONTRACT_MINOR 1
/* What create/run/exec/worker::* answer in an adapter without a backend. */
#define SBX_NO_VM_DETAIL "VM support is not built yet in this sandbox-libkrun build"

struct worker_table;
struct process_table;
struct follows;
struct sbx_terminals;

struct sbx_adapter {
	struct sbx_config *cfg; /* read-only after start */
	struct sbx_registry *reg;
	char *worker_token; /* III_SANDBOX_WORKER_TOKEN; NULL when unset or empty */
	struct sbx_backend backend; /* ops NULL until sbx_adapter_use_backend() */
	struct sbx_fs_host fs;      /* fs::* guest calls and channels; ops NULL: S300 */
	struct sbx_stream_host streams; /* byte channels of streams, logs, terminals; ops NULL: S300 */
	struct reaper reaper;
	struct sbx_mem_budget mem; /* what live VMs may take together */
	const struct sbx_worker_ops *workers; /* NULL: worker::* answer S300 */
	struct worker_table *worker_vms; /* the live worker VMs (worker/worker_table.h), owned by serve */
	struct process_table *procs; /* background processes (process/process_table.h) */
	struct follows *follows;     /* process::logs follows (process/process_follow.h) */
	struct sbx_terminals *terminals; /* the open terminals (terminal/terminal.h) */
};

/* Same contract as engine_handler_fn: 0 with *out the result, or -1 with *out
 * the error body ({code, message}). */
typedef int (*sbx_op_fn)(struct sbx_adapter *a, json_t *req, json_t **out);

/* An exec whose caller waits on a connection of its own (the operator's
 * exec, control/): its output as it comes (on_output, may be NULL; it
 * returns 0 so the reply keeps the output too, as backend.h's on_output
 * says), and whether the caller went away (caller_gone, may be NULL;
 * polled a few times a second: true ends the command as a stop would,
 * S004). */
struct sbx_exec_live {
	int (*on_output)(void *ud, int fd, const void *data, size_t len);
	bool (*caller_gone)(void *ud);
	void *ud;
};

struct sbx_op {
	const char *op; /* "exec"; the function id is "sandbox-libkrun::exec" */
	const char *description;
	const char *request_schema;  /* JSON text */
	const char *response_schema; /* JSON text */
	sbx_op_fn fn;
};

#endif
