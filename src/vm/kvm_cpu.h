/* The CPU as KVM presents it to a `-cpu host` guest, as a fingerprint for
 * the snapshot key (vm/snapshot.h): a template saved on one CPU must not
 * be restored onto another that lacks a feature the running guest already
 * uses (another host, a microcode or kernel update hiding TSX or
 * AVX-512).  The fingerprint hashes KVM_GET_SUPPORTED_CPUID's entries,
 * the KVM API version and the kernel release, leaving out the fields that
 * name the host CPU the ioctl happened to run on (APIC ids). */
#ifndef SBX_VM_KVM_CPU_H
#define SBX_VM_KVM_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define KVM_CPU_HEX 64 /* hex SHA-256 (FILE_HASH_HEX) */
/* KVM offers at most a few hundred entries (KVM_MAX_CPUID_ENTRIES 256). */
#define KVM_CPU_MAX_LEAVES 1024

struct kvm_cpu_leaf {
	uint32_t function, index, flags;
	uint32_t eax, ebx, ecx, edx;
};

/* Pure: the fingerprint of these leaves (in KVM's order), API version and
 * kernel release. */
int kvm_cpu_fingerprint(const struct kvm_cpu_leaf *leaves, size_t n, int api_version, const char *release,
			char hex[KVM_CPU_HEX + 1], sbx_error_t *err);

/* This host's, from /dev/kvm and uname(2). */
int kvm_cpu_host(char hex[KVM_CPU_HEX + 1], sbx_error_t *err);

#endif
