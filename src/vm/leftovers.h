/* Start-up cleanup of the VM processes and files of this VM layer that a
 * crashed daemon left behind.  Each VM has a directory under <state>/vms/
 * named "<pid>-<n>-<random>" (vm.c) after the daemon that started it; when
 * that daemon is gone, the VM processes still using the directory are
 * killed (only after their command line proves they are this layer's QEMU
 * for that directory) and the directory is removed. */
#ifndef SBX_VM_LEFTOVERS_H
#define SBX_VM_LEFTOVERS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The owner pid encoded in a VM directory name; false for other names. */
bool leftover_owner(const char *name, pid_t *pid);
/* True when `cmdline` (/proc/<pid>/cmdline: NUL-separated, `len` bytes) is
 * a QEMU whose arguments reference a file inside `vmdir`. */
bool leftover_is_vm_process(const char *cmdline, size_t len, const char *vmdir);

/* Removes the VM processes and VM directories of this VM layer whose daemon
 * is gone; logs what it removed.  Never fails (what cannot be removed is
 * logged and left).  Returns the number of VM directories removed. */
unsigned sbx_vm_remove_leftovers(void);
/* The same for another subdirectory of the state directory whose entries
 * are named "<pid>-..." after the daemon that made them (the adapter's
 * paused/): an entry whose daemon is gone is removed, files and all (only
 * plain files: a VM directory holds nothing else). */
unsigned sbx_vm_remove_leftovers_of(const char *subdir);

#endif
