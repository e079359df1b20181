/* The guest kernel: libkrunfw's image, wrapped once per library version
 * into a PVH ELF that QEMU boots (cached in the state directory). */
#ifndef SBX_VM_KERNEL_H
#define SBX_VM_KERNEL_H

#include "common/error.h"

#define SBX_KRUNFW_DEFAULT "/usr/local/lib/sandbox-libkrun/libkrunfw.so.5"

/* Returns the path (malloc'd) of the cached PVH ELF for the library at
 * `krunfw_path`, or, when NULL, $SANDBOX_KRUNFW, else the default install
 * path, else the system's libkrunfw.so.5.  Errors carry S300. */
char *sbx_kernel_elf(const char *krunfw_path, sbx_error_t *err);

#endif
