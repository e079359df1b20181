#include "vm/vm_jail.h"

#include <string.h>

#include "common/scodes.h"

uint64_t vm_jail_memory_mib(const struct vm_jail_args *a)
{
	uint64_t guest = a->guest_mib << 20;
	if (!a->ram_cow || a->ram_held_bytes >= guest)
		return a->memory_limit_mib;
	uint64_t holes = guest - a->ram_held_bytes;
	return a->memory_limit_mib + (holes + (1u << 20) - 1) / (1u << 20);
}

uint64_t vm_jail_fsize_bytes(const struct vm_jail_args *a)
{
	/* Writes go to the scratch disk, and the guest's RAM to a file: the
	 * template's state when this boot saves one, a pause's state (any
	 * VM may be paused: vm.h sbx_vm_pause); a RAM memfd's size counts as
	 * a file's too.  Past the limit a write is SIGXFSZ, which ends QEMU. */
	uint64_t state = (a->guest_mib << 20) + (64ull << 20);
	return a->scratch_bytes > state ? a->scratch_bytes : state;
}

struct jail *vm_jail_prepare(struct sbx_jail_host *h, const struct vm_jail_args *a, sbx_error_t *err)
{
	const char *slash = strrchr(a->dir, '/');
	const char *ro[] = { a->qemu, a->kernel, a->boot, a->image };
	const char *rw[] = { a->scratch };
	uint64_t fsize = vm_jail_fsize_bytes(a);
	struct jail_request r = {
		.name = slash != NULL ? slash + 1 : a->dir,
		.memory_mib = vm_jail_memory_mib(a),
		.cpus = a->cpus,
		.fsize_bytes = fsize,
		.ro_files = ro, .n_ro = 4,
		.rw_files = rw, .n_rw = 1,
		.kvm = a->kvm,
		/* /proc/self/fd/N: the memfd (vm/template_memfd.h), of QEMU's own
		 * PID namespace, nosuid, nodev, noexec */
		.proc = a->ram_fd,
	};
	struct jail *j = jail_prepare(h, &r, err);
	if (j == NULL)
		sbx_error_default_scode(err, SBX_S_VM_BOOT);
	return j;
}
