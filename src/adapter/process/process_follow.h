/* process::logs with `follow`: a thread writes a process's log from an
 * offset to the caller's channel (binary frames, as the bytes come) until
 * the process exits and all of it went, then closes the channel.  A
 * follower the ring overtook (its reader too slow for background_log_bytes)
 * closes with an error frame naming the offset to read from. */
#ifndef SBX_ADAPTER_PROCESS_FOLLOW_H
#define SBX_ADAPTER_PROCESS_FOLLOW_H

#include <jansson.h>
#include <stdint.h>

#include "adapter/adapter_state.h"
#include "adapter/process/process_entry.h"

#define FOLLOW_FRAME_MAX 65536 /* the channel's largest frame */

/* Opens the writer `ref` names (S300 without byte channels, the port's
 * S001/S218) and starts the thread on stream fd (1 or 2) from `from`. */
int process_follow_start(struct sbx_adapter *a, struct bg_proc *p, int fd, uint64_t from, json_t *ref,
			 sbx_error_t *err);

#endif
