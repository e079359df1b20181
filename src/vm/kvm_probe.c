#include "vm/kvm_probe.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "common/cleanup.h"

/* The flags line comes early: a fixed cap bounds what we read. */
#define CPUINFO_CAP 16384

static bool is_word(const char *line, const char *end, const char *w)
{
	size_t n = strlen(w);
	for (const char *p = line; p + n <= end; p++) {
		if (memcmp(p, w, n) == 0 && (p == line || p[-1] == ' ' || p[-1] == '\t') &&
		    (p + n == end || p[n] == ' ' || p[n] == '\t'))
			return true;
	}
	return false;
}

bool sbx_cpuinfo_has_hwvirt(const char *cpuinfo, bool *amd)
{
	for (const char *line = cpuinfo; *line != '\0';) {
		const char *end = strchr(line, '\n');
		if (end == NULL)
			end = line + strlen(line);
		if (strncmp(line, "flags", 5) == 0) {
			const char *colon = memchr(line, ':', (size_t)(end - line));
			if (colon != NULL && is_word(colon + 1, end, "vmx"))
				return *amd = false, true;
			if (colon != NULL && is_word(colon + 1, end, "svm"))
				return *amd = true, true;
		}
		line = *end != '\0' ? end + 1 : end;
	}
	return false;
}

/* What QEMU 7.2 checks before it starts a VM under KVM and exits without
 * (accel/kvm/kvm-all.c kvm_required_capabilites, target/i386/kvm/kvm.c
 * kvm_arch_required_capabilities). */
static const struct {
	int cap;
	const char *name;
} required[] = {
	{ KVM_CAP_USER_MEMORY, "KVM_CAP_USER_MEMORY" },
	{ KVM_CAP_DESTROY_MEMORY_REGION_WORKS, "KVM_CAP_DESTROY_MEMORY_REGION_WORKS" },
	{ KVM_CAP_JOIN_MEMORY_REGIONS_WORKS, "KVM_CAP_JOIN_MEMORY_REGIONS_WORKS" },
	{ KVM_CAP_SET_TSS_ADDR, "KVM_CAP_SET_TSS_ADDR" },
	{ KVM_CAP_EXT_CPUID, "KVM_CAP_EXT_CPUID" },
	{ KVM_CAP_MP_STATE, "KVM_CAP_MP_STATE" },
};

void sbx_kvm_probe(const struct sbx_kvm_host *h, struct sbx_kvm_probe *out)
{
	*out = (struct sbx_kvm_probe){ .cause = SBX_KVM_USABLE };
	char info[CPUINFO_CAP];
	if (h->cpuinfo(h->ctx, info, sizeof(info)) < 0 || !sbx_cpuinfo_has_hwvirt(info, &out->amd)) {
		out->cause = SBX_KVM_NO_HWVIRT;
		return;
	}
	int fd = h->open_kvm(h->ctx);
	if (fd < 0) {
		out->errnum = -fd;
		out->cause = -fd == ENOENT || -fd == ENXIO || -fd == ENODEV ? SBX_KVM_NO_DEVICE
			   : -fd == EACCES || -fd == EPERM		   ? SBX_KVM_NO_ACCESS
									   : SBX_KVM_OPEN_FAILED;
		return;
	}
	out->api_version = h->ioctl_kvm(h->ctx, fd, KVM_GET_API_VERSION, 0);
	if (out->api_version != KVM_API_VERSION) {
		out->errnum = out->api_version < 0 ? -out->api_version : 0;
		out->cause = SBX_KVM_API_VERSION;
		h->close_fd(h->ctx, fd);
		return;
	}
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
		int r = h->ioctl_kvm(h->ctx, fd, KVM_CHECK_EXTENSION, (unsigned long)required[i].cap);
		if (r <= 0) {
			out->errnum = r < 0 ? -r : 0;
			out->cause = SBX_KVM_MISSING_CAP;
			out->cap = required[i].name;
			h->close_fd(h->ctx, fd);
			return;
		}
	}
	int vm = h->ioctl_kvm(h->ctx, fd, KVM_CREATE_VM, 0);
	if (vm < 0) {
		out->errnum = -vm;
		out->cause = SBX_KVM_CREATE_VM;
	} else {
		h->close_fd(h->ctx, vm);
	}
	h->close_fd(h->ctx, fd);
}

void sbx_kvm_explain(const struct sbx_kvm_probe *p, char *buf, size_t cap)
{
	const char *module = p->amd ? "kvm_amd" : "kvm_intel";
	switch (p->cause) {
	case SBX_KVM_USABLE:
		snprintf(buf, cap, "KVM is usable (API version %d)", p->api_version);
		break;
	case SBX_KVM_NO_HWVIRT:
		snprintf(buf, cap, "the CPU shows no hardware virtualization (no vmx or svm flag in /proc/cpuinfo): "
				   "enable VT-x/AMD-V in the firmware, or nested virtualization where this host is "
				   "itself a VM");
		break;
	case SBX_KVM_NO_DEVICE:
		snprintf(buf, cap, "/dev/kvm does not exist (%s): the %s module is not loaded: modprobe %s",
			 strerror(p->errnum), module, module);
		break;
	case SBX_KVM_NO_ACCESS:
		snprintf(buf, cap, "/dev/kvm: %s: run the daemon as a member of the device's group (usually kvm: "
				   "usermod -aG kvm USER) or as root",
			 strerror(p->errnum));
		break;
	case SBX_KVM_OPEN_FAILED:
		snprintf(buf, cap, "/dev/kvm cannot be opened: %s", strerror(p->errnum));
		break;
	case SBX_KVM_API_VERSION:
		if (p->errnum != 0)
			snprintf(buf, cap, "/dev/kvm does not answer KVM_GET_API_VERSION (%s): it is not a KVM device",
				 strerror(p->errnum));
		else
			snprintf(buf, cap, "/dev/kvm speaks KVM API version %d, QEMU needs %d", p->api_version,
				 KVM_API_VERSION);
		break;
	case SBX_KVM_CREATE_VM:
		snprintf(buf, cap, "KVM_CREATE_VM failed (%s): another hypervisor may hold VT-x/AMD-V, or the %s "
				   "module refused this CPU (see the kernel log)",
			 strerror(p->errnum), module);
		break;
	case SBX_KVM_MISSING_CAP:
		snprintf(buf, cap, "this kernel's KVM lacks %s, which QEMU requires: a newer kernel is needed", p->cap);
		break;
	}
}

static int real_cpuinfo(void *ctx, char *buf, size_t cap)
{
	(void)ctx;
	cleanup_close int fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t len = 0;
	ssize_t n;
	while (len < cap - 1 && (n = read(fd, buf + len, cap - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	return 0;
}

static int real_open(void *ctx)
{
	(void)ctx;
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

static int real_ioctl(void *ctx, int fd, unsigned long request, unsigned long arg)
{
	(void)ctx;
	int r = ioctl(fd, request, arg);
	return r >= 0 ? r : -errno;
}

static void real_close(void *ctx, int fd)
{
	(void)ctx;
	close(fd);
}

const struct sbx_kvm_host sbx_kvm_real_host = { real_cpuinfo, real_open, real_ioctl, real_close, NULL };
