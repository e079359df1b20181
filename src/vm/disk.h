/* The VM's disks built on the host: a read-only erofs image from a rootfs
 * directory, and a fresh sparse ext4 scratch disk. */
#ifndef SBX_VM_DISK_H
#define SBX_VM_DISK_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

#define SBX_SCRATCH_DEFAULT_MIB 2048 /* apparent size; sparse */
#define SBX_SCRATCH_MIN_MIB 64
#define SBX_SCRATCH_MAX_MIB (1024u * 1024u)

/* Builds `out` (atomically: a temp sibling, then rename) from `dir`,
 * keeping owners, modes and times. */
int disk_erofs_from_dir(const char *dir, const char *out, sbx_error_t *err);

/* Creates a sparse ext4 file of `size` bytes at `path` (must not exist):
 * a copy of a template made once per size under the state directory's
 * scratch/ (mkfs.ext4 per VM cost a process spawn on every boot). */
int disk_scratch_create(const char *path, uint64_t size, sbx_error_t *err);

/* Copies file `from` to a new file `to` (0600, must not exist), sharing
 * blocks where the filesystem can and keeping holes everywhere. */
int disk_clone(const char *from, const char *to, sbx_error_t *err);

/* Whether the file system holding `path` opens it with O_DIRECT (tmpfs
 * before Linux 6.6 does not): QEMU then writes the disk without the host's
 * page cache, which the VM's memory cgroup would be charged for. */
bool disk_direct_io(const char *path);

#endif
