/* A worker's persistent data disk, <worker dir>/data.ext4: the overlay
 * upper of its VM, created once (sparse ext4 of worker_disk_mb) and kept
 * across prepare, stop and start; only destroy deletes it. */
#ifndef SBX_WORKER_DISK_H
#define SBX_WORKER_DISK_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

/* Creates <dir>/data.ext4 of `mib` MiB unless it exists; *created says
 * whether this call made it. */
int worker_data_disk_ensure(const char *dir, uint32_t mib, bool *created, sbx_error_t *err);

#endif
