/* The background processes of every sandbox (issue 26), keyed by sandbox
 * id: what each sandbox started, running or exited, whether it asked to be
 * kept alive while one runs, and the admission to its cap.  A sandbox's
 * processes leave with it (process_table_drop, from the teardown once its
 * VM is detached, which waits for the pumps). */
#ifndef SBX_ADAPTER_PROCESS_TABLE_H
#define SBX_ADAPTER_PROCESS_TABLE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "adapter/process/process_entry.h"
#include "common/error.h"

struct process_table;

struct process_table *process_table_new(sbx_error_t *err);
/* Joins the pumps left (none once every sandbox was torn down). */
void process_table_free(struct process_table *t);

/* create's keep_alive_while_running for a new sandbox. */
int process_table_keep_alive(struct process_table *t, const char *sandbox_id, sbx_error_t *err);
bool process_table_kept_alive(struct process_table *t, const char *sandbox_id);

/* Admits one more running process to `sandbox_id`: S003 naming
 * max_background_per_sandbox when `cap` run or are starting.  Admitted
 * while `cap` exited ones are kept, it drops the oldest of them (and the
 * memory its logs held) first.  Pair with process_table_add (it took) or
 * process_table_unreserve. */
int process_table_reserve(struct process_table *t, const char *sandbox_id, uint32_t cap, sbx_error_t *err);
void process_table_unreserve(struct process_table *t, const char *sandbox_id);
/* Turns a reservation into `p` (the table takes a reference).  Exited
 * processes past `cap` go, oldest first, so a sandbox keeps at most `cap`
 * running and `cap` exited ones. */
void process_table_add(struct process_table *t, const char *sandbox_id, struct bg_proc *p, uint32_t cap);

/* A new reference to a process of the sandbox; S001 naming an unknown one. */
struct bg_proc *process_table_find(struct process_table *t, const char *sandbox_id, const char *process_id,
				   sbx_error_t *err);
/* [row, ...] of bg_proc_row, oldest first. */
json_t *process_table_rows(struct process_table *t, const char *sandbox_id);
/* [fn(p), ...] of the sandbox's processes, oldest first (NULL: out of
 * memory; fn is called under the table's lock). */
json_t *process_table_map(struct process_table *t, const char *sandbox_id, json_t *(*fn)(struct bg_proc *p));

/* Forgets a stopped sandbox: joins its pumps, drops its processes. */
void process_table_drop(struct process_table *t, const char *sandbox_id);

#endif
