/* Whether this host's KVM can run our QEMU, asked the way QEMU asks it:
 * the CPU's vmx/svm flag, open("/dev/kvm"), KVM_GET_API_VERSION = 12,
 * KVM_CREATE_VM, and the capabilities QEMU 7.2 refuses to start without
 * (kvm-all.c's required list and target/i386/kvm's).  A failure names
 * its cause and its fix.  Passing is necessary, not sufficient: some
 * hosts (kvm-pvm) grant all of it and QEMU still dies under -cpu host;
 * accel.h's fallback covers that. */
#ifndef SBX_VM_KVM_PROBE_H
#define SBX_VM_KVM_PROBE_H

#include <stdbool.h>
#include <stddef.h>

enum sbx_kvm_cause {
	SBX_KVM_USABLE,
	SBX_KVM_NO_HWVIRT,   /* no vmx/svm in /proc/cpuinfo */
	SBX_KVM_NO_DEVICE,   /* /dev/kvm missing: the module is not loaded */
	SBX_KVM_NO_ACCESS,   /* EACCES/EPERM on /dev/kvm */
	SBX_KVM_OPEN_FAILED, /* another errno from open */
	SBX_KVM_API_VERSION, /* KVM_GET_API_VERSION is not 12 (or failed) */
	SBX_KVM_CREATE_VM,   /* KVM_CREATE_VM failed (VT-x held by another hypervisor, ...) */
	SBX_KVM_MISSING_CAP, /* a capability QEMU needs */
};

struct sbx_kvm_probe {
	enum sbx_kvm_cause cause;
	int errnum;      /* of the failed open or ioctl, 0 = none */
	int api_version; /* what KVM_GET_API_VERSION said */
	const char *cap; /* the missing capability's name */
	bool amd;        /* svm rather than vmx: names the module to load */
};

/* The host, as the probe sees it (tests give a fake one).  open_kvm and
 * ioctl_kvm return a descriptor or result >= 0, or -errno. */
struct sbx_kvm_host {
	/* /proc/cpuinfo's text, NUL-terminated, at most cap - 1 bytes; -1 when unreadable. */
	int (*cpuinfo)(void *ctx, char *buf, size_t cap);
	int (*open_kvm)(void *ctx);
	int (*ioctl_kvm)(void *ctx, int fd, unsigned long request, unsigned long arg);
	void (*close_fd)(void *ctx, int fd);
	void *ctx;
};

/* This machine: /proc/cpuinfo and /dev/kvm. */
extern const struct sbx_kvm_host sbx_kvm_real_host;

/* True when a "flags" line of /proc/cpuinfo text lists vmx or svm (*amd: svm). */
bool sbx_cpuinfo_has_hwvirt(const char *cpuinfo, bool *amd);

void sbx_kvm_probe(const struct sbx_kvm_host *h, struct sbx_kvm_probe *out);
/* The cause and its fix, one sentence: "/dev/kvm does not exist: the
 * kvm_intel module is not loaded (modprobe kvm_intel)". */
void sbx_kvm_explain(const struct sbx_kvm_probe *p, char *buf, size_t cap);

#endif
