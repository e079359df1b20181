/* virtio-fs shares of CONFIG mounted by PID 1 before READY. */
#ifndef SBX_GUEST_BOOT_SHARES_H
#define SBX_GUEST_BOOT_SHARES_H

#include "common/error.h"
#include "proto/proto_msg.h"

/* Mounts each share's tag (virtiofs) on its path in the sandbox root,
 * creating missing directories (0755); read-only ones with MS_RDONLY. */
int boot_mount_shares(const struct proto_config *c, sbx_error_t *err);

#endif
