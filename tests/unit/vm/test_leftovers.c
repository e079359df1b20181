/* The identity checks of the start-up cleanup (vm/leftovers.h): which VM
 * directory names carry an owner pid, and which command lines are a VM
 * process of a given VM directory. */
#include <sys/types.h>

#include "harness.h"
#include "vm/leftovers.h"

TEST(leftover_identity)
{
	pid_t pid = 0;
	CHECK(leftover_owner("1234-0-0a1b2c3d", &pid));
	CHECK_INT(pid, 1234);
	CHECK(!leftover_owner("abc", &pid));
	CHECK(!leftover_owner("1234", &pid));
	CHECK(!leftover_owner("-5-0-x", &pid));
	CHECK(!leftover_owner("99999999999-0-x", &pid));
	const char q[] = "/usr/bin/qemu-system-x86_64\0-drive\0file=/s/vms/12-0-ab/scratch.ext4\0";
	CHECK(leftover_is_vm_process(q, sizeof(q) - 1, "/s/vms/12-0-ab"));
	CHECK(!leftover_is_vm_process(q, sizeof(q) - 1, "/s/vms/12-0-a")); /* a prefix is not the dir */
	CHECK(!leftover_is_vm_process(q, sizeof(q) - 1, "/s/vms/13-0-ab"));
	const char other[] = "/bin/cat\0/s/vms/12-0-ab/scratch.ext4\0";
	CHECK(!leftover_is_vm_process(other, sizeof(other) - 1, "/s/vms/12-0-ab")); /* not QEMU */
	const char unterminated[] = { 'q', 'e', 'm', 'u' };
	CHECK(!leftover_is_vm_process(unterminated, sizeof(unterminated), "/s"));
}
