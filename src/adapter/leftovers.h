/* Start-up cleanup of what a crashed daemon left under <state>/vms/: a VM
 * directory belongs to the process whose pid starts its name
 * ("<pid>-<n>-<random>", vm.c); when that process is gone, QEMU processes
 * still using the directory are killed (only after their command line
 * proves what they are) and the directory is removed. */
#ifndef SBX_ADAPTER_LEFTOVERS_H
#define SBX_ADAPTER_LEFTOVERS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The owner pid encoded in a VM directory name; false for other names. */
bool leftover_owner(const char *name, pid_t *pid);
/* True when `cmdline` (/proc/<pid>/cmdline: NUL-separated, `len` bytes) is
 * a QEMU whose arguments reference a file inside `vmdir`. */
bool leftover_is_vm_process(const char *cmdline, size_t len, const char *vmdir);

/* Cleans the state directory; logs what it removed.  Returns the number of
 * VM directories removed. */
unsigned leftovers_clean(void);

#endif
