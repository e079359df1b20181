/* Pause and resume of a sandbox (issue 40): its VM's memory, devices and
 * disk go to `<state dir>/paused/sb-<id>` and its QEMU exits; the record, its
 * background processes and their logs stay.  Paused, it holds no memory
 * of the budget and no slot of max_concurrent_sandboxes; it counts against
 * max_paused_sandboxes and its bytes against snapshot_store_mb.  A call
 * that needs its VM resumes it first (auto_resume), or gets S004. */
#ifndef SBX_ADAPTER_PAUSE_SANDBOX_PAUSE_H
#define SBX_ADAPTER_PAUSE_SANDBOX_PAUSE_H

#include <stdbool.h>
#include <stdint.h>

#include "adapter/adapter_state.h"
#include "common/error.h"

/* How long the VM layer may take: a pause writes the guest's RAM out, a
 * resume reads it back, both under TCG on a loaded host. */
#define SANDBOX_PAUSE_DEADLINE_MS 120000
#define SANDBOX_RESUME_DEADLINE_MS 120000

/* Pauses running sandbox `id` (canonical): S002/S004 as exec, S001 when it
 * is paused or being paused or resumed already, S400 past
 * max_paused_sandboxes, snapshot_store_mb or the state directory's free
 * space, S300 when the VM layer cannot (its VM then runs on, unless it
 * died).  Foreground execs in flight end with S004 saying the sandbox was
 * paused; open terminals are closed first. */
int sandbox_pause(struct sbx_adapter *a, const char *id, uint64_t *size_bytes, int64_t *duration_ms,
		  sbx_error_t *err);
/* The reaper's pause of sandbox `id` (idle_action pause): sandbox_pause,
 * after the policy `lim` said again, under the registry's lock, that it is
 * idle; 1 (nothing done) when a call came since the reaper's scan. */
int sandbox_pause_idle(struct sbx_adapter *a, const char *id, const struct reap_limits *lim, sbx_error_t *err);
/* live_restore's pause of running sandbox `id` as the daemon stops
 * (pause/sandbox_restart.h): sandbox_pause, its record saying the next
 * daemon resumes it; S300 when the state could not be kept for it (the
 * sandbox is paused, and stopped with the daemon). */
int sandbox_pause_for_restart(struct sbx_adapter *a, const char *id, sbx_error_t *err);
/* Resumes paused sandbox `id` (canonical), waiting for a pause or resume
 * in progress first: S002/S004 as exec, S001 when it is not paused, S400
 * when its memory does not fit the budget or max_concurrent_sandboxes is
 * reached (it stays paused), S300 when its VM could not start again (the
 * sandbox is then removed).  *ready_ms: the resume's duration. */
int sandbox_resume(struct sbx_adapter *a, const char *id, int64_t *ready_ms, sbx_error_t *err);
/* sandbox_resume, but a sandbox running already (a call resumed it) is
 * no error: 0 with *ready_ms 0. */
int sandbox_resume_paused(struct sbx_adapter *a, const char *id, int64_t *ready_ms, sbx_error_t *err);
/* The preamble of a call that needs the VM of sandbox `id` (canonical):
 * nothing for a running (or unknown: the call's own check says S002)
 * sandbox; a paused one is resumed (auto_resume) or refused with S004
 * SBX_PAUSED_FMT.  Concurrent callers share one resume. */
int sandbox_wake(struct sbx_adapter *a, const char *id, sbx_error_t *err);
/* sandbox_wake, then sbx_registry_check: the extensions' preamble. */
int sandbox_wake_check(struct sbx_adapter *a, const char *id, sbx_error_t *err);
/* The directory of sandbox `id`'s paused state (malloc'd), its parent
 * made (0700): `<state dir>/paused/sb-<id>` (a prefix no pid has: the
 * `<pid>-<id>` names of builds before paused sandboxes outlived their
 * daemon are vm/leftovers.h's to remove). */
#define SANDBOX_PAUSED_PREFIX "sb-"
char *sandbox_paused_dir(const char *id, sbx_error_t *err);
/* S400 unless the file system of dir's parent has `need` bytes free for
 * `what` (a pause, a snapshot) beside what the image store keeps free. */
int sandbox_space_check(const char *dir, const char *what, uint64_t need, sbx_error_t *err);
/* An error of the VM layer without an S-code becomes S300 "<what> failed: ...". */
void sandbox_as_platform(const char *what, sbx_error_t *err);

#endif
