/* The hold of an fs call on a sandbox that may be paused: resumed first
 * (auto_resume) or refused, then held (fs_hold.h).  Apart from fs_hold.c,
 * which terminals also use: they wake their sandbox in their handler, and
 * the pause waits for terminals to close, so fs_hold.c must not call the
 * pause. */
#ifndef SBX_ADAPTER_FS_FS_WAKE_H
#define SBX_ADAPTER_FS_FS_WAKE_H

#include "adapter/fs/fs_hold.h"

/* Canonical id (S001), resumed when paused (S004 without auto_resume),
 * held record (S002/S004). */
struct fs_hold fs_hold_wake(struct sbx_adapter *a, const char *id, sbx_error_t *err);

#endif
