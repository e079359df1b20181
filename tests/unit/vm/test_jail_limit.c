/* The memory limit of a VM's cgroup (vm/vm_jail.h): the caller's worst
 * case, and for a clone of a copy-on-write template the holes of the
 * template's memfd besides. */
#include <stdint.h>

#include "harness.h"
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
