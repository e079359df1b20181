#include "vm/accel.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/scodes.h"

int sbx_accel_parse(const char *s, enum sbx_accel *out, sbx_error_t *err)
{
	if (s == NULL || s[0] == '\0' || strcmp(s, "auto") == 0)
		*out = SBX_ACCEL_AUTO;
	else if (strcmp(s, "kvm") == 0)
		*out = SBX_ACCEL_KVM;
	else if (strcmp(s, "tcg") == 0)
		*out = SBX_ACCEL_TCG;
	else
		return sbx_error_set(err, EINVAL, "accel must be auto, kvm or tcg");
	return 0;
}

const char *sbx_accel_name(enum sbx_accel a)
{
	return a == SBX_ACCEL_KVM ? "kvm" : a == SBX_ACCEL_TCG ? "tcg" : "auto";
}

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

bool sbx_cpuinfo_has_hwvirt(const char *cpuinfo)
{
	for (const char *line = cpuinfo; *line != '\0';) {
		const char *end = strchr(line, '\n');
		if (end == NULL)
			end = line + strlen(line);
		if (strncmp(line, "flags", 5) == 0) {
			const char *colon = memchr(line, ':', (size_t)(end - line));
			if (colon != NULL && (is_word(colon + 1, end, "vmx") || is_word(colon + 1, end, "svm")))
				return true;
		}
		line = *end != '\0' ? end + 1 : end;
	}
	return false;
}

int sbx_accel_decide(enum sbx_accel want, bool hwvirt, bool kvm_opens, enum sbx_accel *out,
		     sbx_error_t *err)
{
	bool kvm = hwvirt && kvm_opens;
	if (want == SBX_ACCEL_KVM && !kvm)
		return sbx_error_scode(err, SBX_S_VM_BOOT,
				       "accel kvm is unusable here: %s; use accel tcg (or auto)",
				       !hwvirt ? "the CPU has no hardware virtualization (no vmx/svm in /proc/cpuinfo)"
					       : "/dev/kvm cannot be opened (load kvm_intel/kvm_amd, check permissions)");
	*out = want == SBX_ACCEL_TCG ? SBX_ACCEL_TCG : kvm ? SBX_ACCEL_KVM : SBX_ACCEL_TCG;
	return 0;
}

/* Reads /proc/cpuinfo up to a fixed cap (the flags line comes early). */
static bool host_hwvirt(void)
{
	cleanup_close int fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	char local[16384];
	size_t len = 0;
	ssize_t n;
	while (len < sizeof(local) - 1 && (n = read(fd, local + len, sizeof(local) - 1 - len)) > 0)
		len += (size_t)n;
	local[len] = '\0';
	return sbx_cpuinfo_has_hwvirt(local);
}

static bool kvm_opens(void)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

int sbx_accel_choose(enum sbx_accel want, enum sbx_accel *out, sbx_error_t *err)
{
	if (want == SBX_ACCEL_TCG) {
		*out = SBX_ACCEL_TCG;
		return 0;
	}
	bool hw = host_hwvirt();
	if (sbx_accel_decide(want, hw, hw && kvm_opens(), out, err) < 0)
		return -1;
	static atomic_bool warned;
	if (*out == SBX_ACCEL_TCG && !atomic_exchange(&warned, true))
		sbx_warn("no hardware virtualization (vmx/svm with a usable /dev/kvm): VMs run under TCG "
			 "emulation: a cold boot takes seconds");
	return 0;
}
