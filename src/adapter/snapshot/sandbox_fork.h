/* sandbox-libkrun::fork (issue 39): `count` new sandboxes from a live
 * one at one point of its run, through a snapshot taken for them. */
#ifndef SBX_ADAPTER_SNAPSHOT_SANDBOX_FORK_H
#define SBX_ADAPTER_SNAPSHOT_SANDBOX_FORK_H

#include <stdint.h>

#include "adapter/adapter_state.h"
#include "common/error.h"

#define SANDBOX_FORK_MAX 32

/* Forks running sandbox `id` (canonical) `count` times (1 to
 * SANDBOX_FORK_MAX, else S001), each named `name` (may be NULL); the new
 * ids go to ids[0..count).  S400 before anything is captured when `count`
 * more do not fit max_concurrent_sandboxes or the memory budget; otherwise
 * the snapshot's and the creates' S-codes, with nothing left created.
 * *snapshot_ms: the capture; *ready_ms: the whole fork. */
int sandbox_fork(struct sbx_adapter *a, const char *id, uint32_t count, const char *name,
		 char (*ids)[SBX_UUID_STRLEN + 1], int64_t *snapshot_ms, int64_t *ready_ms, sbx_error_t *err);

#endif
