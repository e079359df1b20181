#include <errno.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "vm/accel.h"
#include "vm/kvm_probe.h"

TEST(cpuinfo_flags)
{
	bool amd = true;
	CHECK(sbx_cpuinfo_has_hwvirt("processor\t: 0\nflags\t\t: fpu vme vmx sse\n", &amd) && !amd);
	CHECK(sbx_cpuinfo_has_hwvirt("flags\t\t: fpu svm\n", &amd) && amd);
	CHECK(!sbx_cpuinfo_has_hwvirt("flags\t\t: fpu vmxe sse hypervisor\n", &amd));
	CHECK(!sbx_cpuinfo_has_hwvirt("model name\t: vmx svm\nflags\t\t: fpu\n", &amd));
	CHECK(!sbx_cpuinfo_has_hwvirt("", &amd));
	CHECK(sbx_cpuinfo_has_hwvirt("flags : vmx", &amd));
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

/* A host that answers as told; it records what the probe asked. */
struct fake {
	const char *cpuinfo;
	int open_rc;       /* fd or -errno */
	int api;           /* KVM_GET_API_VERSION's answer (or -errno) */
	int missing_cap;   /* KVM_CHECK_EXTENSION says 0 for this one (-1: none) */
	int create_rc;     /* KVM_CREATE_VM's answer */
	int opened, closed, created;
};

static int fake_cpuinfo(void *ctx, char *buf, size_t cap)
{
	struct fake *f = ctx;
	if (f->cpuinfo == NULL)
		return -1;
	snprintf(buf, cap, "%s", f->cpuinfo);
	return 0;
}

static int fake_open(void *ctx)
{
	struct fake *f = ctx;
	f->opened += f->open_rc >= 0;
	return f->open_rc;
}

static int fake_ioctl(void *ctx, int fd, unsigned long req, unsigned long arg)
{
	struct fake *f = ctx;
	(void)fd;
	if (req == KVM_GET_API_VERSION)
		return f->api;
	if (req == KVM_CHECK_EXTENSION)
		return (int)arg == f->missing_cap ? 0 : 1;
	if (req == KVM_CREATE_VM) {
		f->created += f->create_rc >= 0;
		return f->create_rc;
	}
	return -ENOTTY;
}

static void fake_close(void *ctx, int fd)
{
	struct fake *f = ctx;
	(void)fd;
	f->closed++;
}

static struct fake good(void)
{
	return (struct fake){ .cpuinfo = "flags\t: fpu vmx\n", .open_rc = 7, .api = KVM_API_VERSION,
			      .missing_cap = -1, .create_rc = 8 };
}

/* Probes the fake; returns the explanation in buf. */
static enum sbx_kvm_cause probe(struct fake *f, char *buf, size_t cap)
{
	struct sbx_kvm_host h = { fake_cpuinfo, fake_open, fake_ioctl, fake_close, f };
	struct sbx_kvm_probe p;
	sbx_kvm_probe(&h, &p);
	sbx_kvm_explain(&p, buf, cap);
	return p.cause;
}

TEST(probe_causes_and_fixes)
{
	char why[512];
	struct fake f = good();
	CHECK_INT(probe(&f, why, sizeof(why)), SBX_KVM_USABLE);
	/* The VM was made, and every descriptor closed again. */
	CHECK_INT(f.created, 1);
	CHECK_INT(f.closed, 2);

	f = good();
	f.cpuinfo = "flags\t: fpu hypervisor\n";
	CHECK_INT(probe(&f, why, sizeof(why)), SBX_KVM_NO_HWVIRT);
	CHECK(strstr(why, "no vmx or svm") != NULL && strstr(why, "nested virtualization") != NULL);
	CHECK_INT(f.opened, 0);

	f = good();
	f.open_rc = -ENOENT;
	CHECK_INT(probe(&f, why, sizeof(why)), SBX_KVM_NO_DEVICE);
	CHECK(strstr(why, "modprobe kvm_intel") != NULL);
	f.cpuinfo = "flags\t: svm\n";
	CHECK_INT(probe(&f, why, sizeof(why)), SBX_KVM_NO_DEVICE);
	CHECK(strstr(why, "modprobe kvm_amd") != NULL);

	f = good();
	f.open_rc = -EACCES;
	CHECK_INT(probe(&f, why, sizeof(why)), SBX_KVM_NO_ACCESS);
	CHECK(strstr(why, "Permission denied") != NULL && strstr(why, "kvm") != NULL &&
	      strstr(why, "usermod -aG kvm") != NULL);

	f = good();
	f.api = 11;
	CHECK_INT(probe(&f, why, sizeof(why)), SBX_KVM_API_VERSION);
	CHECK(strstr(why, "API version 11, QEMU needs 12") != NULL);
	CHECK_INT(f.closed, 1);
	f.api = -ENOTTY; /* /dev/null bind-mounted over /dev/kvm */
	CHECK_INT(probe(&f, why, sizeof(why)), SBX_KVM_API_VERSION);
	CHECK(strstr(why, "not a KVM device") != NULL);

	f = good();
	f.missing_cap = KVM_CAP_SET_TSS_ADDR;
	CHECK_INT(probe(&f, why, sizeof(why)), SBX_KVM_MISSING_CAP);
	CHECK(strstr(why, "KVM_CAP_SET_TSS_ADDR") != NULL);
	CHECK_INT(f.created, 0);

	/* VT-x held by another hypervisor: the device opens, no VM can be made. */
	f = good();
	f.create_rc = -EBUSY;
	CHECK_INT(probe(&f, why, sizeof(why)), SBX_KVM_CREATE_VM);
	CHECK(strstr(why, "KVM_CREATE_VM failed") != NULL && strstr(why, "another hypervisor") != NULL);
	CHECK_INT(f.closed, 1);
}

TEST(decide)
{
	enum sbx_accel a;
	sbx_error_t err = NULL;
	char why[512];
	struct sbx_kvm_probe ok = { .cause = SBX_KVM_USABLE, .api_version = 12 };
	struct sbx_kvm_probe denied = { .cause = SBX_KVM_NO_ACCESS, .errnum = EACCES };
	CHECK(sbx_accel_decide(SBX_ACCEL_AUTO, &ok, &a, why, sizeof(why), &err) == 0 && a == SBX_ACCEL_KVM);
	CHECK_STR(why, "");
	/* auto falls back with the cause and its fix, not "no hardware virtualization". */
	CHECK(sbx_accel_decide(SBX_ACCEL_AUTO, &denied, &a, why, sizeof(why), &err) == 0 && a == SBX_ACCEL_TCG);
	CHECK(strstr(why, "/dev/kvm: Permission denied") != NULL);
	CHECK(sbx_accel_decide(SBX_ACCEL_TCG, &ok, &a, why, sizeof(why), &err) == 0 && a == SBX_ACCEL_TCG);
	CHECK(sbx_accel_decide(SBX_ACCEL_KVM, &denied, &a, NULL, 0, &err) < 0);
	CHECK_STR(err->scode, "S300");
	CHECK(strstr(sbx_error_msg(err), "usermod -aG kvm") != NULL);
	sbx_error_free(&err);
}

TEST(choice_falls_back_once_under_auto_only)
{
	struct sbx_accel_choice c;
	sbx_error_t err = NULL;
	setenv(SBX_ACCEL_PROBE_ENV, "usable", 1);
	sbx_accel_choice_init(&c, SBX_ACCEL_AUTO);
	CHECK_INT(sbx_accel_choice_get(&c), SBX_ACCEL_AUTO);
	CHECK(sbx_accel_choice_decide(&c, &err) == 0);
	CHECK_INT(sbx_accel_choice_get(&c), SBX_ACCEL_KVM);
	CHECK(sbx_accel_choice_fall_back(&c, "qemu: failed to set MSR 0x10a"));
	CHECK_INT(sbx_accel_choice_get(&c), SBX_ACCEL_TCG);
	/* A second VM that failed meanwhile is retried too; nothing moves back. */
	CHECK(sbx_accel_choice_fall_back(&c, "again"));
	CHECK_INT(sbx_accel_choice_get(&c), SBX_ACCEL_TCG);
	/* kvm asked for: no fallback, the VM fails. */
	sbx_accel_choice_init(&c, SBX_ACCEL_KVM);
	CHECK(sbx_accel_choice_decide(&c, &err) == 0);
	CHECK(!sbx_accel_choice_fall_back(&c, "x"));
	CHECK_INT(sbx_accel_choice_get(&c), SBX_ACCEL_KVM);
	unsetenv(SBX_ACCEL_PROBE_ENV);
	sbx_error_free(&err);
}
