/* Filesystem bring-up of PID 1 in the VM (only a VM can run this). */
#ifndef SBX_GUEST_BOOT_MOUNTS_H
#define SBX_GUEST_BOOT_MOUNTS_H

#include <stdint.h>

#include "common/error.h"

/* devtmpfs, proc and sysfs on the boot disk; fds 0-2 on the console. */
int boot_early_mounts(sbx_error_t *err);
/* Overlay of /dev/vdb (erofs, lower) and /dev/vdc (ext4, upper+work) made
 * the root with pivot_root; the boot disk is detached.  Directories of the
 * image can be renamed (redirect_dir=on). */
int boot_switch_root(sbx_error_t *err);
/* proc, sys, dev, devpts, shm, tmp, run and cgroup2 in the new root. */
int boot_root_mounts(sbx_error_t *err);
/* Before HELLO (a template carries it): creates the cgroup every process
 * runs in (each exec in a cgroup of its own inside it,
 * guest/exec_cgroup.h), weighted below init for CPU. */
int boot_cgroup_prepare(sbx_error_t *err);
/* At CONFIG: caps that cgroup at memory_bytes when nonzero and returns
 * its directory opened. */
int boot_process_cgroup(uint64_t memory_bytes, sbx_error_t *err);

#endif
