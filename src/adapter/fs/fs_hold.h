/* What every fs operation does around its guest call: the path and mode
 * checks, the hold of the sandbox (so its VM is not stopped under the
 * call), the VM check and the failure with its S-code.  Shared by the
 * fs::* handlers (handlers_fs.c) and the operator's file copies
 * (fs_stream.c). */
#ifndef SBX_ADAPTER_FS_FS_HOLD_H
#define SBX_ADAPTER_FS_FS_HOLD_H

#include <jansson.h>
#include <stdint.h>

#include "adapter/adapter_state.h"
#include "common/error.h"

/* The preamble: canonical id (S001), held record (S002/S004, bumps the idle
 * clock).  The hold ends at scope end (cleanup_fs_hold) unless it is
 * handed on (fs::read's pump). */
struct fs_hold {
	struct sbx_adapter *a;
	struct sbx_sandbox *sb; /* NULL: not held */
	char id[SBX_UUID_STRLEN + 1];
};

/* Canonical id (S001), held record (S002/S004, bumps the idle clock). */
struct fs_hold fs_hold_take(struct sbx_adapter *a, const char *id, sbx_error_t *err);
void fs_hold_release(struct fs_hold *h);
#define cleanup_fs_hold __attribute__((cleanup(fs_hold_release)))

/* A path the wire can carry (S211 empty, S216 too long). */
int fs_check_path(const char *path, sbx_error_t *err);
/* The octal mode the guest would check first (S210). */
int fs_parse_mode(const char *mode, uint32_t *out, sbx_error_t *err);
/* After the request checks: a VM to talk to (S300 without one). */
int fs_need_vm(const struct fs_hold *h, sbx_error_t *err);
/* After a failed guest call: when the sandbox was stopped while paused,
 * the call failed for the stop (its VM's waiters were aborted): S004
 * saying so replaces *err. */
void fs_hold_blame_stop(const struct fs_hold *h, sbx_error_t *err);
/* Fails an fs operation with the S-code of what went wrong. */
int fs_fail(sbx_error_t *err, uint8_t type, json_t **out);

#endif
