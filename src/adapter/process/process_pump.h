/* The thread behind each background process: drains its output into the
 * rings (the guest's output credit never stalls on a slow caller: the
 * rings let old bytes go), feeds its stdin, records its exit.  It holds the
 * sandbox (an fs-style hold: the VM is not detached under it) and checks
 * every PUMP_POLL_MS whether the sandbox is being stopped, then kills the
 * process, so stop, the reaper and shutdown end every one of them.  With
 * keep_alive it counts as activity for the idle reaper while it runs. */
#ifndef SBX_ADAPTER_PROCESS_PUMP_H
#define SBX_ADAPTER_PROCESS_PUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapter/adapter_state.h"
#include "adapter/process/process_entry.h"

#define PUMP_POLL_MS 200

/* Starts p's pump (p->ops and p->handle set).  On success it owns the hold
 * `sb` (from sbx_registry_fs_begin), `in` (malloc'd stdin, NULL for none)
 * and a new reference to p; on failure the caller keeps them. */
int process_pump_start(struct sbx_adapter *a, struct sbx_sandbox *sb, struct bg_proc *p, uint8_t *in, size_t in_len,
		       bool keep_alive, sbx_error_t *err);

#endif
