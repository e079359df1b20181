/* Accelerator choice: KVM only where the CPU has hardware virtualization
 * (vmx/svm) and /dev/kvm opens; TCG otherwise. */
#ifndef SBX_VM_ACCEL_H
#define SBX_VM_ACCEL_H

#include <stdbool.h>

#include "common/error.h"

enum sbx_accel { SBX_ACCEL_AUTO, SBX_ACCEL_KVM, SBX_ACCEL_TCG };

/* "auto" | "kvm" | "tcg" (NULL or "" = auto). */
int sbx_accel_parse(const char *s, enum sbx_accel *out, sbx_error_t *err);
const char *sbx_accel_name(enum sbx_accel a);

/* True when a "flags" line of /proc/cpuinfo text lists vmx or svm. */
bool sbx_cpuinfo_has_hwvirt(const char *cpuinfo);

/* Pure decision: returns KVM or TCG, or fails (S300) when KVM was asked
 * for and is unusable. */
int sbx_accel_decide(enum sbx_accel want, bool hwvirt, bool kvm_opens, enum sbx_accel *out,
		     sbx_error_t *err);

/* Probes this host and decides; warns once per process when auto falls
 * back to TCG. */
int sbx_accel_choose(enum sbx_accel want, enum sbx_accel *out, sbx_error_t *err);

#endif
