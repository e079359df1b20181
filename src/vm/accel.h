/* Accelerator choice: KVM where this host's KVM can run our QEMU
 * (vm/kvm_probe.h), TCG otherwise.  A daemon decides once
 * (struct sbx_accel_choice) and every VM it starts follows that decision;
 * the one-shot CLI paths probe for their own process. */
#ifndef SBX_VM_ACCEL_H
#define SBX_VM_ACCEL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "vm/kvm_probe.h"

enum sbx_accel { SBX_ACCEL_AUTO, SBX_ACCEL_KVM, SBX_ACCEL_TCG };

/* Test hook: SANDBOX_TEST_KVM_PROBE=usable makes the probe pass where
 * this host's KVM cannot even be opened, as kvm-pvm's passes, so that
 * the fallback below can be tested on a machine without KVM. */
#define SBX_ACCEL_PROBE_ENV "SANDBOX_TEST_KVM_PROBE"

/* "auto" | "kvm" | "tcg" (NULL or "" = auto). */
int sbx_accel_parse(const char *s, enum sbx_accel *out, sbx_error_t *err);
const char *sbx_accel_name(enum sbx_accel a);

/* Pure decision from a probe's result: KVM or TCG, or fails (S300 naming
 * the cause and its fix) when KVM was asked for and is unusable.  Under
 * auto, a TCG decision made for a cause writes that sentence to why
 * (NULL: not wanted). */
int sbx_accel_decide(enum sbx_accel want, const struct sbx_kvm_probe *p, enum sbx_accel *out, char *why,
		     size_t why_cap, sbx_error_t *err);

/* Probes this host and decides; warns once per process, with the cause
 * and its fix, when auto falls back to TCG. */
int sbx_accel_choose(enum sbx_accel want, enum sbx_accel *out, sbx_error_t *err);

/* A daemon's one decision.  `in_use` is AUTO until decided; an auto that
 * came to KVM moves to TCG for good when a VM cannot start under KVM
 * (sbx_accel_choice_fall_back). */
struct sbx_accel_choice {
	enum sbx_accel want;
	_Atomic int in_use;
};

void sbx_accel_choice_init(struct sbx_accel_choice *c, enum sbx_accel want);
/* Probes once (sbx_accel_choose); on failure (kvm asked for and unusable)
 * in_use stays AUTO and each VM's start fails with the cause. */
int sbx_accel_choice_decide(struct sbx_accel_choice *c, sbx_error_t *err);
/* KVM or TCG once decided, else the configured want. */
enum sbx_accel sbx_accel_choice_get(const struct sbx_accel_choice *c);
/* A VM could not start under KVM (`cause`: QEMU's own words).  Under auto
 * the decision becomes TCG, with one warning naming the cause, and true
 * says: start that VM again under TCG.  False under kvm (the operator
 * asked for it: the VM fails). */
bool sbx_accel_choice_fall_back(struct sbx_accel_choice *c, const char *cause);

/* What KVM itself allocates for one VM, charged by the kernel to the
 * cgroup of the QEMU that made it (GFP_KERNEL_ACCOUNT): EPT/NPT page
 * tables (8 bytes per 4 KiB guest page: guest/512), the memslots' reverse
 * maps (as much again), each vCPU's state (VMCS/VMCB, FPU, MMU caches:
 * 1 MiB each, rounded up) and the VM's own (irqchip, PIT, memslot
 * arrays: 2 MiB).  In MiB, rounded up. */
uint32_t sbx_kvm_overhead_mib(uint32_t guest_mib, uint32_t cpus);

#endif
