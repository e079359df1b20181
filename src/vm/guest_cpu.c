#include "vm/guest_cpu.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"

void guest_cpu_decide(enum sbx_accel accel, bool want_nested, bool want_smt, bool host_smt, unsigned cpus,
		      struct guest_cpu *out)
{
	bool kvm = accel == SBX_ACCEL_KVM;
	*out = (struct guest_cpu){ .threads_per_core = 1 };
	if (want_nested && kvm)
		out->nested_virt = true;
	else if (want_nested)
		out->nested_refused = "nested virtualisation: not granted under TCG (QEMU's emulated CPU gives "
				      "every guest the same emulated SVM and no VMX, asked or not)";
	if (!want_smt)
		return;
	if (!kvm)
		out->smt_refused = "two threads per core: ignored under TCG (no host cores to mirror)";
	else if (!host_smt)
		out->smt_refused = "two threads per core: ignored, the host's SMT is off or absent";
	else if (cpus < 2 || cpus % 2 != 0)
		out->smt_refused = "two threads per core: ignored for an odd CPU count";
	else
		out->threads_per_core = 2;
}

bool guest_cpu_host_smt(void)
{
	cleanup_close int fd = open("/sys/devices/system/cpu/smt/active", O_RDONLY | O_CLOEXEC);
	char c = '0';
	return fd >= 0 && read(fd, &c, 1) == 1 && c == '1';
}

void guest_cpu_choose(enum sbx_accel accel, bool want_nested, bool want_smt, unsigned cpus, struct guest_cpu *out)
{
	static atomic_bool said_nested, said_smt;
	guest_cpu_decide(accel, want_nested, want_smt, want_smt && guest_cpu_host_smt(), cpus, out);
	if (out->nested_refused != NULL && !atomic_exchange(&said_nested, true))
		sbx_warn("vm: %s", out->nested_refused);
	if (out->smt_refused != NULL && !atomic_exchange(&said_smt, true))
		sbx_warn("vm: %s", out->smt_refused);
}
