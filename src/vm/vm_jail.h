/* The jail of one VM's QEMU (jail/jail.h), from what the VM is: its files,
 * its size and its accelerator. */
#ifndef SBX_VM_VM_JAIL_H
#define SBX_VM_VM_JAIL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "jail/jail.h"

/* QEMU's own memory beside guest RAM and the TCG cache when the caller
 * gives no limit: the adapter's cost model (adapter/mem_budget.h). */
#define SBX_VM_JAIL_QEMU_MIB 64

struct vm_jail_args {
	const char *dir; /* the VM directory: its name names the cgroup leaf */
	const char *qemu, *kernel, *boot, *image, *scratch;
	unsigned cpus;
	uint64_t memory_limit_mib; /* guest RAM + QEMU + TCG cache */
	uint64_t guest_mib;
	bool kvm;
	bool saves_template; /* QEMU writes the guest's RAM to a template file */
	bool ram_memfd;      /* guest RAM is a memfd QEMU sizes (virtio-fs) */
	uint64_t scratch_bytes; /* the scratch disk: the most QEMU writes to a file */
	bool ram_fd;            /* guest RAM is a template's memfd: QEMU names it
				   in its own /proc */
	bool ram_cow;           /* a clone: a private mapping of that memfd */
	uint64_t ram_held_bytes; /* a clone's: the bytes the memfd holds now */
};

/* The cgroup's memory limit: memory_limit_mib, and for a clone the
 * template memfd's holes besides.  A clone's first touch of a page the
 * memfd lacks allocates that page in the memfd (shmem, charged to the
 * clone's cgroup and not reclaimable without swap) before its private
 * copy: up to twice the guest's RAM for one that fills it. */
uint64_t vm_jail_memory_mib(const struct vm_jail_args *a);

/* The largest file QEMU may write (RLIMIT_FSIZE): the scratch disk, or
 * the guest's RAM and its devices' state (+64 MiB) where QEMU writes
 * them to a file. */
uint64_t vm_jail_fsize_bytes(const struct vm_jail_args *a);

/* S300 on failure: the VM must not run unconfined when a jail is in force. */
struct jail *vm_jail_prepare(struct sbx_jail_host *h, const struct vm_jail_args *a, sbx_error_t *err);

#endif
