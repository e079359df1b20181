#include "vm/kvm_cpu.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "vm/file_hash.h"

#define KVM_DEV "/dev/kvm"
#define FIRST_TRY 128
#define RELEASE_MAX 64 /* utsname's field is 65 bytes */
#define HEAD_MAX (32 + RELEASE_MAX)
#define LINE_LEN 63    /* "%08x.%08x" and five " %08x", "\n" */

/* The registers that say which host CPU ran the ioctl, not what a guest
 * gets: leaf 1 EBX[31:24] (initial APIC id), leaves 0xB and 0x1F EDX
 * (x2APIC id), leaf 0x8000001E (AMD: APIC, core and node ids). */
static struct kvm_cpu_leaf portable(struct kvm_cpu_leaf l)
{
	if (l.function == 0x1)
		l.ebx &= 0x00ffffffu;
	else if (l.function == 0xb || l.function == 0x1f)
		l.edx = 0;
	else if (l.function == 0x8000001eu)
		l.eax = l.ebx = l.ecx = 0;
	return l;
}

int kvm_cpu_fingerprint(const struct kvm_cpu_leaf *leaves, size_t n, int api_version, const char *release,
			char hex[KVM_CPU_HEX + 1], sbx_error_t *err)
{
	if (n == 0 || n > KVM_CPU_MAX_LEAVES || release == NULL || strlen(release) > RELEASE_MAX ||
	    strchr(release, '\n') != NULL)
		return sbx_error_set(err, EINVAL, "kvm cpu fingerprint: bad input");
	size_t cap = HEAD_MAX + n * LINE_LEN + 1, len;
	cleanup_free char *text = malloc(cap);
	if (text == NULL)
		return sbx_error_errno(err, ENOMEM, "kvm cpu fingerprint");
	int w = snprintf(text, cap, "kvm api %d\nkernel %s\n", api_version, release);
	if (w < 0 || (size_t)w >= HEAD_MAX)
		return sbx_error_set(err, EOVERFLOW, "kvm cpu fingerprint");
	len = (size_t)w;
	for (size_t i = 0; i < n; i++) {
		struct kvm_cpu_leaf l = portable(leaves[i]);
		w = snprintf(text + len, cap - len, "%08x.%08x %08x %08x %08x %08x %08x\n", l.function, l.index,
			     l.flags, l.eax, l.ebx, l.ecx, l.edx);
		if (w != LINE_LEN)
			return sbx_error_set(err, EOVERFLOW, "kvm cpu fingerprint");
		len += (size_t)w;
	}
	if (file_hash_bytes(text, len, hex) < 0)
		return sbx_error_set(err, EIO, "kvm cpu fingerprint: sha256 failed");
	return 0;
}

/* KVM_GET_SUPPORTED_CPUID into a buffer that grows while KVM says E2BIG. */
static struct kvm_cpuid2 *supported_cpuid(int kvm, sbx_error_t *err)
{
	for (size_t nent = FIRST_TRY; nent <= KVM_CPU_MAX_LEAVES; nent *= 2) {
		struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + nent * sizeof(struct kvm_cpuid_entry2));
		if (c == NULL)
			return sbx_error_errno(err, ENOMEM, "kvm cpuid"), NULL;
		c->nent = (uint32_t)nent;
		if (ioctl(kvm, KVM_GET_SUPPORTED_CPUID, c) == 0 && c->nent > 0 && c->nent <= nent)
			return c;
		int e = errno;
		free(c);
		if (e != E2BIG)
			return sbx_error_errno(err, e, KVM_DEV ": KVM_GET_SUPPORTED_CPUID"), NULL;
	}
	return sbx_error_set(err, E2BIG, KVM_DEV ": more than %d CPUID entries", KVM_CPU_MAX_LEAVES), NULL;
}

int kvm_cpu_host(char hex[KVM_CPU_HEX + 1], sbx_error_t *err)
{
	cleanup_close int kvm = open(KVM_DEV, O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		return sbx_error_errno(err, errno, "open " KVM_DEV);
	int api = ioctl(kvm, KVM_GET_API_VERSION, 0);
	if (api < 0)
		return sbx_error_errno(err, errno, KVM_DEV ": KVM_GET_API_VERSION");
	struct utsname u;
	if (uname(&u) < 0)
		return sbx_error_errno(err, errno, "uname");
	cleanup_free struct kvm_cpuid2 *c = supported_cpuid(kvm, err);
	if (c == NULL)
		return -1;
	cleanup_free struct kvm_cpu_leaf *v = calloc(c->nent, sizeof(*v));
	if (v == NULL)
		return sbx_error_errno(err, ENOMEM, "kvm cpuid");
	for (uint32_t i = 0; i < c->nent; i++) {
		const struct kvm_cpuid_entry2 *e = &c->entries[i];
		v[i] = (struct kvm_cpu_leaf){ e->function, e->index, e->flags, e->eax, e->ebx, e->ecx, e->edx };
	}
	return kvm_cpu_fingerprint(v, c->nent, api, u.release, hex, err);
}
