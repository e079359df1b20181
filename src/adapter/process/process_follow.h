/* process::logs with `follow`: a process's log from an offset to the
 * caller's channel (binary frames, as the bytes come) until the process
 * exits and all of it went, then a normal Close.  A follower the ring
 * overtook (its reader too slow for background_log_bytes) closes with an
 * error frame naming the offset to read from; one whose reader left (the
 * engine closed the channel) ends at once.
 *
 * One thread serves every follow: a poll loop over the writers' sockets
 * (the engine's Close, room to send) and an eventfd the processes' output
 * wakes, sending without ever blocking on one reader.  Follows are capped
 * per sandbox (max_follows_per_sandbox) and in all (max_follows): one more
 * is refused with S003 naming the cap. */
#ifndef SBX_ADAPTER_PROCESS_FOLLOW_H
#define SBX_ADAPTER_PROCESS_FOLLOW_H

#include <jansson.h>
#include <stdint.h>

#include "adapter/adapter_state.h"
#include "adapter/process/process_entry.h"

#define FOLLOW_FRAME_MAX 65536   /* the channel's largest frame */
#define FOLLOW_CLOSE_WAIT_MS 2000 /* for the engine's answer to a follow's Close */
#define FOLLOW_STOP_WAIT_MS 5000  /* at shutdown, for the follows still sending */

struct follows;

struct follows *follows_new(sbx_error_t *err);
/* Lets the follows left send what their processes wrote (they all exited
 * by then) for up to FOLLOW_STOP_WAIT_MS, drops the rest, ends the loop. */
void follows_free(struct follows *fl);
/* The follows streaming now: of `sandbox_id`, or of all with NULL. */
unsigned follows_count(struct follows *fl, const char *sandbox_id);

/* Admits a follow of p's stream fd (1 or 2) in `sandbox_id` from `from`
 * (S003 naming max_follows_per_sandbox or max_follows), opens the writer
 * `ref` names (S300 without byte channels, the port's S001/S218) and hands
 * it to the loop. */
int process_follow_start(struct sbx_adapter *a, const char *sandbox_id, struct bg_proc *p, int fd, uint64_t from,
			 json_t *ref, sbx_error_t *err);

#endif
