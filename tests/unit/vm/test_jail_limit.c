/* The memory limit of a VM's cgroup (vm/vm_jail.h): the caller's worst
 * case, and for a clone of a copy-on-write template the holes of the
 * template's memfd besides.  The largest file QEMU may write holds a
 * pause's state: the guest's RAM, whatever the scratch disk's size. */
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"
#include "vm/accel.h"
#include "vm/vm_internal.h"
#include "vm/vm_jail.h"

static struct vm_jail_args args(void)
{
	/* 256 MiB of guest RAM + QEMU's 64 + the 64 MiB translation cache */
	return (struct vm_jail_args){ .guest_mib = 256, .memory_limit_mib = 384 };
}

TEST(anonymous_ram_keeps_the_callers_limit)
{
	struct vm_jail_args a = args();
	CHECK_INT(vm_jail_memory_mib(&a), 384);
}

TEST(the_template_vm_writes_its_memfd_as_guest_ram)
{
	struct vm_jail_args a = args();
	a.ram_fd = true; /* shared: its pages are the guest's RAM, counted once */
	CHECK_INT(vm_jail_memory_mib(&a), 384);
}

TEST(a_clone_may_fill_the_memfds_holes)
{
	struct vm_jail_args a = args();
	a.ram_fd = true;
	a.ram_cow = true;
	a.ram_held_bytes = 48ull << 20;
	CHECK_INT(vm_jail_memory_mib(&a), 384 + 208);
	a.ram_held_bytes = 0;
	CHECK_INT(vm_jail_memory_mib(&a), 384 + 256);
	/* A partial MiB of holes counts whole. */
	a.ram_held_bytes = (48ull << 20) + 4096;
	CHECK_INT(vm_jail_memory_mib(&a), 384 + 208);
	a.ram_held_bytes = 256ull << 20;
	CHECK_INT(vm_jail_memory_mib(&a), 384);
	/* A memfd larger than the guest (never made so) adds nothing. */
	a.ram_held_bytes = 300ull << 20;
	CHECK_INT(vm_jail_memory_mib(&a), 384);
}

/* A VM starts under the accelerator its caller decided (a daemon's one
 * decision), never a probe of its own, and its cgroup limit follows it;
 * only AUTO (a one-shot caller) probes.  The probe is made to pass, as
 * kvm-pvm's does: a re-probe would say KVM. */
TEST(the_decision_passed_in_is_followed_not_a_probe)
{
	setenv(SBX_ACCEL_PROBE_ENV, "usable", 1);
	struct sbx_vm_options opt = { .cpus = 2, .memory_mib = 1024, .accel = SBX_ACCEL_TCG, .tcg_cache_mib = 64 };
	enum sbx_accel a = SBX_ACCEL_AUTO;
	uint64_t jail = 0;
	sbx_error_t err = NULL;
	CHECK_INT(vm_decide_accel(&opt, &a, &jail, &err), 0);
	CHECK_INT(a, SBX_ACCEL_TCG);
	CHECK_INT(jail, 1024 + SBX_VM_JAIL_QEMU_MIB + 64);
	opt.accel = SBX_ACCEL_KVM;
	CHECK_INT(vm_decide_accel(&opt, &a, &jail, &err), 0);
	CHECK_INT(a, SBX_ACCEL_KVM);
	/* KVM's own memory instead of the cache: 2 + 2 MiB of maps, 2 vCPUs, 2 for the VM. */
	CHECK_INT(jail, 1024 + SBX_VM_JAIL_QEMU_MIB + 8);
	/* The caller's limit (the admission's worst case) is kept as given. */
	opt.jail_memory_mib = 2000;
	CHECK_INT(vm_decide_accel(&opt, &a, &jail, &err), 0);
	CHECK_INT(jail, 2000);
	opt.jail_memory_mib = 0;
	opt.accel = SBX_ACCEL_AUTO;
	CHECK_INT(vm_decide_accel(&opt, &a, &jail, &err), 0);
	CHECK_INT(a, SBX_ACCEL_KVM);
	unsetenv(SBX_ACCEL_PROBE_ENV);
	sbx_error_free(&err);
}

TEST(a_pause_may_write_the_guests_ram_past_a_small_scratch_disk)
{
	/* Any VM may be paused (vm.h sbx_vm_pause): QEMU then migrates its
	 * RAM into a file, and a write past RLIMIT_FSIZE is SIGXFSZ, which
	 * ends QEMU (and the VM) in the middle of the pause. */
	struct vm_jail_args a = { .guest_mib = 4096, .memory_limit_mib = 4224, .scratch_bytes = 1ull << 30 };
	CHECK(vm_jail_fsize_bytes(&a) >= (4096ull + 64) << 20);
	a.ram_fd = true; /* a clone's private RAM is in the file all the same */
	CHECK(vm_jail_fsize_bytes(&a) >= (4096ull + 64) << 20);
	/* A scratch disk larger than that stays the bound. */
	a.scratch_bytes = 8ull << 30;
	CHECK(vm_jail_fsize_bytes(&a) == 8ull << 30);
}
