/* What a VM's CPU gets of its owner's asks (vm/guest_cpu.h). */
#include "harness.h"
#include "vm/guest_cpu.h"

TEST(sandboxes_get_neither)
{
	struct guest_cpu g;
	guest_cpu_decide(SBX_ACCEL_KVM, false, false, true, 4, &g);
	CHECK(!g.nested_virt);
	CHECK_INT(g.threads_per_core, 1);
	CHECK(g.nested_refused == NULL && g.smt_refused == NULL);
}

TEST(kvm_grants_nesting_and_smt_where_the_host_has_it)
{
	struct guest_cpu g;
	guest_cpu_decide(SBX_ACCEL_KVM, true, true, true, 4, &g);
	CHECK(g.nested_virt);
	CHECK_INT(g.threads_per_core, 2);
	CHECK(g.nested_refused == NULL && g.smt_refused == NULL);
	/* No SMT on the host, or an odd count: one thread per core, said. */
	guest_cpu_decide(SBX_ACCEL_KVM, false, true, false, 4, &g);
	CHECK_INT(g.threads_per_core, 1);
	CHECK(g.smt_refused != NULL && strstr(g.smt_refused, "SMT is off") != NULL);
	guest_cpu_decide(SBX_ACCEL_KVM, false, true, true, 3, &g);
	CHECK_INT(g.threads_per_core, 1);
	CHECK(g.smt_refused != NULL && strstr(g.smt_refused, "odd") != NULL);
}

TEST(tcg_grants_neither_and_says_so)
{
	struct guest_cpu g;
	guest_cpu_decide(SBX_ACCEL_TCG, true, true, true, 4, &g);
	CHECK(!g.nested_virt);
	CHECK_INT(g.threads_per_core, 1);
	CHECK(g.nested_refused != NULL && strstr(g.nested_refused, "TCG") != NULL);
	CHECK(g.smt_refused != NULL && strstr(g.smt_refused, "TCG") != NULL);
}
