#include <string.h>

#include "harness.h"
#include "vm/accel.h"

TEST(cpuinfo_flags)
{
	CHECK(sbx_cpuinfo_has_hwvirt("processor\t: 0\nflags\t\t: fpu vme vmx sse\n"));
	CHECK(sbx_cpuinfo_has_hwvirt("flags\t\t: fpu svm\n"));
	CHECK(!sbx_cpuinfo_has_hwvirt("flags\t\t: fpu vmxe sse hypervisor\n"));
	CHECK(!sbx_cpuinfo_has_hwvirt("model name\t: vmx svm\nflags\t\t: fpu\n"));
	CHECK(!sbx_cpuinfo_has_hwvirt(""));
	CHECK(sbx_cpuinfo_has_hwvirt("flags : vmx"));
}

TEST(parse_names)
{
	enum sbx_accel a;
	sbx_error_t err = NULL;
	CHECK(sbx_accel_parse(NULL, &a, &err) == 0 && a == SBX_ACCEL_AUTO);
	CHECK(sbx_accel_parse("kvm", &a, &err) == 0 && a == SBX_ACCEL_KVM);
	CHECK(sbx_accel_parse("tcg", &a, &err) == 0 && a == SBX_ACCEL_TCG);
	CHECK(sbx_accel_parse("hvf", &a, &err) < 0);
	sbx_error_free(&err);
	CHECK_STR(sbx_accel_name(SBX_ACCEL_TCG), "tcg");
}

TEST(decide)
{
	enum sbx_accel a;
	sbx_error_t err = NULL;
	CHECK(sbx_accel_decide(SBX_ACCEL_AUTO, true, true, &a, &err) == 0 && a == SBX_ACCEL_KVM);
	/* kvm-pvm: /dev/kvm opens but the CPU has no vmx/svm. */
	CHECK(sbx_accel_decide(SBX_ACCEL_AUTO, false, true, &a, &err) == 0 && a == SBX_ACCEL_TCG);
	CHECK(sbx_accel_decide(SBX_ACCEL_AUTO, true, false, &a, &err) == 0 && a == SBX_ACCEL_TCG);
	CHECK(sbx_accel_decide(SBX_ACCEL_TCG, true, true, &a, &err) == 0 && a == SBX_ACCEL_TCG);
	CHECK(sbx_accel_decide(SBX_ACCEL_KVM, false, true, &a, &err) < 0);
	CHECK_STR(err->scode, "S300");
	CHECK(strstr(sbx_error_msg(err), "vmx") != NULL);
	sbx_error_free(&err);
	CHECK(sbx_accel_decide(SBX_ACCEL_KVM, true, false, &a, &err) < 0);
	CHECK(strstr(sbx_error_msg(err), "/dev/kvm") != NULL);
	sbx_error_free(&err);
}
