/* The uid range of the jails: one uid (also used as the gid) per live jail,
 * held by an exclusive flock on <dir>/<uid>, so that every daemon on the
 * host (whatever its state directory) and every VM of one daemon get
 * different ones, and a daemon that dies gives its uids back at once. */
#ifndef SBX_JAIL_IDS_H
#define SBX_JAIL_IDS_H

#include <stdint.h>

#include "common/error.h"

/* The lowest free uid of [base, base + count): *uid, and the descriptor
 * whose lock holds it.  Fails (EAGAIN) when all are taken. */
int jail_uid_acquire(const char *dir, uint32_t base, uint32_t count, uint32_t *uid, int *lock_fd,
		     sbx_error_t *err);
void jail_uid_release(int lock_fd);

#endif
