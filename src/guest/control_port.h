/* Finds and opens the virtio-serial port named "control" (no udev: the
 * name is only in sysfs). */
#ifndef SBX_GUEST_CONTROL_PORT_H
#define SBX_GUEST_CONTROL_PORT_H

#include "common/error.h"

/* Returns a blocking, CLOEXEC read/write fd. */
int control_port_open(sbx_error_t *err);

#endif
