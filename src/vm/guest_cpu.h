/* What a VM's CPU gets of what its owner asked for (a Compose worker VM:
 * III_VM_NESTED_VIRT, III_VM_HYPERTHREADING): nested virtualisation and
 * two threads per core exist only under KVM, and SMT only where the host
 * runs two threads per core itself and the CPU count is even.  Every
 * other VM gets neither (vm/qemu_cmdline.c). */
#ifndef SBX_VM_GUEST_CPU_H
#define SBX_VM_GUEST_CPU_H

#include <stdbool.h>

#include "vm/accel.h"

struct guest_cpu {
	bool nested_virt;
	unsigned threads_per_core; /* 1 or 2 */
	/* Why an ask was not granted (static text), NULL when it was or
	 * nothing was asked. */
	const char *nested_refused, *smt_refused;
};

/* Pure: the decision for a VM of `cpus` vCPUs under `accel` (decided,
 * KVM or TCG) on a host whose SMT is active or not. */
void guest_cpu_decide(enum sbx_accel accel, bool want_nested, bool want_smt, bool host_smt, unsigned cpus,
		      struct guest_cpu *out);

/* Whether this host runs two threads per core now
 * (/sys/devices/system/cpu/smt/active). */
bool guest_cpu_host_smt(void);

/* The decision for this host (its SMT looked at only when asked); a
 * refused ask is logged once per process per kind. */
void guest_cpu_choose(enum sbx_accel accel, bool want_nested, bool want_smt, unsigned cpus, struct guest_cpu *out);

#endif
