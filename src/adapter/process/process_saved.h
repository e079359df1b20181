/* A background process as a paused sandbox's record keeps it across
 * daemons (issue 40 item 4): its id, command, guest pid, clocks, exit and
 * what its two logs hold, so that a later daemon lists it, serves its
 * logs from the same offsets and, when it runs, pumps the rest. */
#ifndef SBX_ADAPTER_PROCESS_SAVED_H
#define SBX_ADAPTER_PROCESS_SAVED_H

#include <jansson.h>
#include <stddef.h>

#include "adapter/mem_budget.h"
#include "adapter/process/process_entry.h"
#include "common/error.h"

/* {process_id, argv, pid, started_ms, ended_ms, running, exit_code?,
 * stdout: {end, data}, stderr: {end, data}} (data base64), or NULL
 * without memory.  Takes p->lock. */
json_t *bg_proc_saved(struct bg_proc *p);
/* A process (one reference, no pump, no handle) from what bg_proc_saved
 * wrote, its logs charged to `mem` as bg_proc_new's; a log longer than
 * log_bytes keeps its newest bytes.  S001 naming what is wrong in a
 * record that is not one (it is read from disk: hostile). */
struct bg_proc *bg_proc_from_saved(json_t *rec, size_t log_bytes, struct sbx_mem_budget *mem, sbx_error_t *err);

#endif
