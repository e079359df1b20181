/* Reading the kernel log for OOM kills: records in /dev/kmsg's format
 * from a file, since a test cannot make the kernel kill on demand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "vm/oom_log.h"

static int log_fd(const char *text)
{
	char path[] = "/tmp/kmsg-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return -1;
	unlink(path);
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text) || lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static bool killed(const char *text, pid_t pid, uint64_t since_us)
{
	int fd = log_fd(text);
	bool k = fd >= 0 && oom_log_killed(fd, pid, since_us);
	if (fd >= 0)
		close(fd);
	return k;
}

static const char LOG[] =
	"6,1201,5000000,-;qemu-system-x86 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0\n"
	" SUBSYSTEM=memory\n"
	"3,1250,7000000,-;Out of memory: Killed process 4242 (qemu-system-x86) total-vm:2000000kB, "
	"anon-rss:900000kB\n"
	"3,1260,9000000,-;Memory cgroup out of memory: Killed process 777 (qemu-system-x86) total-vm:1kB\n"
	"6,1270,9500000,-;oom_reaper: reaped process 777 (qemu-system-x86), now anon-rss:0kB\n";

TEST(global_and_cgroup_kills_are_found)
{
	CHECK(killed(LOG, 4242, 0));
	CHECK(killed(LOG, 777, 8000000));
	CHECK(!killed(LOG, 4243, 0));
	CHECK(!killed(LOG, 424, 0)); /* a prefix of another pid */
	CHECK(!killed(LOG, 42, 0));
}

TEST(kills_before_the_vm_started_do_not_count)
{
	/* pid 4242 was killed at 7 s; a VM that started at 8 s with a reused
	 * pid was not. */
	CHECK(!killed(LOG, 4242, 8000000));
	CHECK(killed(LOG, 4242, 7000000));
}

TEST(malformed_and_truncated_records)
{
	CHECK(!killed("", 1, 0));
	CHECK(!killed("garbage without a prefix Killed process 5 (x)\n", 5, 0));
	CHECK(!killed("3,1,xyz,-;Killed process 5 (x)\n", 5, 0));
	/* A continuation line is not a record of its own. */
	CHECK(!killed(" 3,1,1,-;Killed process 5 (x)\n", 5, 0));
	/* A last record without its newline is incomplete: ignored. */
	CHECK(!killed("3,1,1,-;Killed process 5 (x)", 5, 0));
	/* A line longer than any record is skipped, and what follows read. */
	size_t big = 20000;
	char *text = malloc(big + 64);
	CHECK(text != NULL);
	memset(text, 'a', big);
	snprintf(text + big, 64, "\n3,2,10,-;Out of memory: Killed process 9 (q)\n");
	CHECK(killed(text, 9, 0));
	free(text);
}
