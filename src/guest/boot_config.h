/* Applies CONFIG inside the VM: hostname, open-file limit, clock and
 * kernel RNG seed. */
#ifndef SBX_GUEST_BOOT_CONFIG_H
#define SBX_GUEST_BOOT_CONFIG_H

#include "common/error.h"
#include "proto/proto_msg.h"

int boot_apply_config(const struct proto_config *c, sbx_error_t *err);

#endif
