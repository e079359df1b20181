/* The identity checks of the start-up cleanup (vm/leftovers.h): which VM
 * directory names carry an owner pid, and which command lines are a VM
 * process of a given VM directory; and the sweep of another state
 * subdirectory (the adapter's paused/). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

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

static char state[64];

__attribute__((destructor)) static void remove_state(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", state);
	if (state[0] != '\0' && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", state);
}

/* dir/name with one file in it, as a paused state holds. */
static int make_entry(const char *dir, const char *name)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (mkdir(path, 0700) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/%s/state", dir, name);
	FILE *f = fopen(path, "w");
	return f != NULL && fputs("guest memory", f) >= 0 && fclose(f) == 0 ? 0 : -1;
}

static int exists(const char *dir, const char *name)
{
	char path[256];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0;
}

/* The paused state of a daemon that is gone goes at the next start; a
 * live daemon's stays, and so do names without an owner. */
TEST(paused_state_of_a_gone_daemon_is_removed)
{
	snprintf(state, sizeof(state), "/tmp/sbx-leftovers.XXXXXX");
	CHECK(mkdtemp(state) != NULL);
	setenv("III_SANDBOX_STATE_DIR", state, 1);
	char paused[128], gone[64], live[64];
	snprintf(paused, sizeof(paused), "%s/paused", state);
	CHECK_INT(mkdir(paused, 0700), 0);
	/* A pid that was a process's and is no more. */
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	CHECK(child > 0);
	CHECK_INT(waitpid(child, NULL, 0), child);
	snprintf(gone, sizeof(gone), "%d-0f8fad5b-d9cb-469f-a165-70867728950e", (int)child);
	snprintf(live, sizeof(live), "%d-7c9e6679-7425-40de-944b-e07fc1f90ae7", (int)getpid());
	CHECK_INT(make_entry(paused, gone), 0);
	CHECK_INT(make_entry(paused, live), 0);
	CHECK_INT(make_entry(paused, "not-an-owner"), 0);
	CHECK_INT(sbx_vm_remove_leftovers_of("paused"), 1);
	CHECK(!exists(paused, gone));
	CHECK(exists(paused, live));
	CHECK(exists(paused, "not-an-owner"));
	/* vms/ is another directory: nothing there, nothing removed. */
	CHECK_INT(sbx_vm_remove_leftovers(), 0);
	CHECK(exists(paused, live));
}
