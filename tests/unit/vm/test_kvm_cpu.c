/* The CPU fingerprint in a KVM template's key (vm/kvm_cpu.h). */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include "harness.h"
#include "vm/kvm_cpu.h"

/* A few leaves of a made-up CPU: vendor, features (leaf 1 with APIC id
 * 3), structured features (AVX-512F is leaf 7 EBX bit 16), topology. */
static const struct kvm_cpu_leaf cpu[] = {
	{ 0x0, 0, 0, 0x1f, 0x756e6547, 0x6c65746e, 0x49656e69 },
	{ 0x1, 0, 0, 0x000806f8, 0x03100800, 0xf7fa3223, 0x178bfbff },
	{ 0x7, 0, 1, 0x2, 0xf1bf2ffb, 0x1b415f6e, 0xa4010010 },
	{ 0xb, 0, 1, 0x1, 0x2, 0x100, 0x3 },
};
#define N (sizeof(cpu) / sizeof(cpu[0]))

static int print(const struct kvm_cpu_leaf *v, size_t n, int api, const char *release, char hex[KVM_CPU_HEX + 1])
{
	sbx_error_t err = NULL;
	int rc = kvm_cpu_fingerprint(v, n, api, release, hex, &err);
	sbx_error_free(&err);
	return rc;
}

TEST(another_cpuid_kernel_or_api_is_another_fingerprint)
{
	char a[KVM_CPU_HEX + 1], b[KVM_CPU_HEX + 1];
	CHECK_INT(print(cpu, N, 12, "6.1.0-31-amd64", a), 0);
	CHECK_INT((int)strlen(a), KVM_CPU_HEX);
	CHECK_INT(print(cpu, N, 12, "6.1.0-31-amd64", b), 0);
	CHECK_STR(a, b);
	/* A microcode update hides AVX-512F. */
	struct kvm_cpu_leaf less[N];
	memcpy(less, cpu, sizeof(cpu));
	less[2].ebx &= ~(1u << 16);
	CHECK_INT(print(less, N, 12, "6.1.0-31-amd64", b), 0);
	CHECK(strcmp(a, b) != 0);
	/* A leaf fewer. */
	CHECK_INT(print(cpu, N - 1, 12, "6.1.0-31-amd64", b), 0);
	CHECK(strcmp(a, b) != 0);
	CHECK_INT(print(cpu, N, 12, "6.1.0-32-amd64", b), 0);
	CHECK(strcmp(a, b) != 0);
	CHECK_INT(print(cpu, N, 13, "6.1.0-31-amd64", b), 0);
	CHECK(strcmp(a, b) != 0);
}

/* KVM fills some registers from the host CPU the ioctl ran on. */
TEST(the_host_cpu_that_answered_is_not_in_it)
{
	char a[KVM_CPU_HEX + 1], b[KVM_CPU_HEX + 1];
	struct kvm_cpu_leaf other[N];
	memcpy(other, cpu, sizeof(cpu));
	other[1].ebx = (other[1].ebx & 0x00ffffffu) | (7u << 24);
	other[3].edx = 7;
	CHECK_INT(print(cpu, N, 12, "r", a), 0);
	CHECK_INT(print(other, N, 12, "r", b), 0);
	CHECK_STR(a, b);
	/* The rest of those registers is. */
	other[1].ebx ^= 0x100;
	CHECK_INT(print(other, N, 12, "r", b), 0);
	CHECK(strcmp(a, b) != 0);
}

TEST(bad_input_is_refused)
{
	char a[KVM_CPU_HEX + 1];
	CHECK_INT(print(cpu, 0, 12, "r", a), -1);
	CHECK_INT(print(cpu, KVM_CPU_MAX_LEAVES + 1, 12, "r", a), -1);
	CHECK_INT(print(cpu, N, 12, NULL, a), -1);
	CHECK_INT(print(cpu, N, 12, "a\nb", a), -1);
	char longer[100];
	memset(longer, 'x', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	CHECK_INT(print(cpu, N, 12, longer, a), -1);
}

/* This host's /dev/kvm, where there is one: the same fingerprint whichever
 * CPU the process runs on. */
TEST(this_host_from_any_of_its_cpus)
{
	char a[KVM_CPU_HEX + 1], b[KVM_CPU_HEX + 1];
	sbx_error_t err = NULL;
	if (access("/dev/kvm", F_OK) < 0) {
		sbx_test_skip("no /dev/kvm on this host");
		return;
	}
	cpu_set_t all, one;
	CHECK_INT(sched_getaffinity(0, sizeof(all), &all), 0);
	int first = -1, second = -1;
	for (int i = 0; i < CPU_SETSIZE && second < 0; i++) {
		if (CPU_ISSET(i, &all))
			*(first < 0 ? &first : &second) = i;
	}
	CPU_ZERO(&one);
	CPU_SET(first, &one);
	CHECK_INT(sched_setaffinity(0, sizeof(one), &one), 0);
	if (kvm_cpu_host(a, &err) < 0 && (err->errnum == EACCES || err->errnum == EPERM)) {
		CHECK_INT(sched_setaffinity(0, sizeof(all), &all), 0);
		sbx_error_free(&err);
		sbx_test_skip("/dev/kvm is not ours to open");
		return;
	}
	if (err != NULL)
		fprintf(stderr, "# %s\n", sbx_error_msg(err));
	CHECK(err == NULL);
	if (second >= 0) {
		CPU_ZERO(&one);
		CPU_SET(second, &one);
		CHECK_INT(sched_setaffinity(0, sizeof(one), &one), 0);
	}
	CHECK_INT(kvm_cpu_host(b, &err), 0);
	CHECK_INT(sched_setaffinity(0, sizeof(all), &all), 0);
	CHECK_STR(a, b);
	sbx_error_free(&err);
}
