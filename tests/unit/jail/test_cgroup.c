/* The cgroup of a jail (jail/jail_cgroup.h): its limits, the files that
 * carry them on v1 and v2, where the hierarchies are mounted, this
 * process's path and directory in them, and leaf names. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "jail/jail_cgroup.h"

TEST(limits_from_memory_and_cpus)
{
	struct jail_cg_limits l;
	jail_cg_limits(640, 2, &l);
	CHECK_INT(l.memory_bytes, 640ull << 20);
	CHECK_INT(l.cpu_period_us, 100000);
	CHECK_INT(l.cpu_quota_us, 200000);
	CHECK_INT(l.pids_max, JAIL_CG_PIDS_MAX);
	jail_cg_limits(512, 0, &l);
	CHECK_INT(l.cpu_quota_us, 100000); /* 0 CPUs means 1 */
}

TEST(v1_settings_in_order)
{
	struct jail_cg_limits l;
	jail_cg_limits(640, 2, &l);
	struct jail_cg_setting s[JAIL_CG_MAX_SETTINGS];
	size_t n = jail_cg_settings(JAIL_CG_V1, &l, s);
	CHECK_INT(n, 6);
	/* memory.limit_in_bytes before memsw, which may never be below it */
	CHECK_STR(s[0].file, "memory.limit_in_bytes");
	CHECK_STR(s[0].value, "671088640");
	CHECK_INT(s[0].dir, 0);
	CHECK(!s[0].optional);
	CHECK_STR(s[1].file, "memory.memsw.limit_in_bytes");
	CHECK_STR(s[1].value, "671088640"); /* equal: no swap */
	CHECK(s[1].optional);
	CHECK_STR(s[2].file, "memory.swappiness");
	CHECK_STR(s[3].file, "pids.max");
	CHECK_STR(s[3].value, "256");
	CHECK_INT(s[3].dir, 1);
	CHECK_STR(s[4].file, "cpu.cfs_period_us");
	CHECK_STR(s[5].file, "cpu.cfs_quota_us");
	CHECK_STR(s[5].value, "200000");
	CHECK_INT(s[5].dir, 2);
}

TEST(v2_settings)
{
	struct jail_cg_limits l;
	jail_cg_limits(1024, 1, &l);
	struct jail_cg_setting s[JAIL_CG_MAX_SETTINGS];
	size_t n = jail_cg_settings(JAIL_CG_V2, &l, s);
	CHECK_INT(n, 5);
	for (size_t i = 0; i < n; i++)
		CHECK_INT(s[i].dir, 0);
	CHECK_STR(s[0].file, "memory.max");
	CHECK_STR(s[0].value, "1073741824");
	CHECK_STR(s[1].file, "memory.swap.max");
	CHECK_STR(s[1].value, "0");
	CHECK_STR(s[2].file, "memory.oom.group");
	CHECK_STR(s[2].value, "1");
	CHECK_STR(s[3].file, "pids.max");
	CHECK_STR(s[4].file, "cpu.max");
	CHECK_STR(s[4].value, "100000 100000");
	CHECK_INT(jail_cg_settings(JAIL_CG_NONE, &l, s), 0);
}

static const char mountinfo[] =
	"25 30 0:23 / /sys rw,nosuid - sysfs sysfs rw\n"
	"31 25 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n"
	"32 31 0:27 / /sys/fs/cgroup/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct\n"
	"33 31 0:28 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
	"34 31 0:29 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
	"35 31 0:30 /docker/c1 /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

TEST(mount_points)
{
	char *root = NULL;
	char *p = jail_cg_mount_point(mountinfo, "cgroup", "memory", &root);
	CHECK_STR(p, "/sys/fs/cgroup/memory");
	free(p);
	free(root);
	p = jail_cg_mount_point(mountinfo, "cgroup", "cpu", &root);
	CHECK_STR(p, "/sys/fs/cgroup/cpu"); /* cpu among cpu,cpuacct */
	CHECK_STR(root, "/");
	free(p);
	free(root);
	p = jail_cg_mount_point(mountinfo, "cgroup2", NULL, &root);
	CHECK_STR(p, "/sys/fs/cgroup/unified");
	CHECK_STR(root, "/docker/c1");
	free(p);
	free(root);
	CHECK(jail_cg_mount_point(mountinfo, "cgroup", "cpuset", &root) == NULL);
	CHECK(jail_cg_mount_point(mountinfo, "cgroup", "cpua", &root) == NULL); /* a prefix is no match */
	CHECK(jail_cg_mount_point("garbage without separator\n", "cgroup", "memory", &root) == NULL);
}

TEST(own_dirs)
{
	char *d = jail_cg_own_dir("/sys/fs/cgroup/memory", "/", "/process_api/abc");
	CHECK_STR(d, "/sys/fs/cgroup/memory/process_api/abc");
	free(d);
	d = jail_cg_own_dir("/sys/fs/cgroup", "/", "/");
	CHECK_STR(d, "/sys/fs/cgroup");
	free(d);
	/* A container's hierarchy mounted from its own cgroup. */
	d = jail_cg_own_dir("/sys/fs/cgroup", "/docker/c1", "/docker/c1/sub");
	CHECK_STR(d, "/sys/fs/cgroup/sub");
	free(d);
	d = jail_cg_own_dir("/sys/fs/cgroup", "/docker/c1", "/docker/c1");
	CHECK_STR(d, "/sys/fs/cgroup");
	free(d);
	d = jail_cg_own_dir("/sys/fs/cgroup", "/docker/c1", "/");
	CHECK_STR(d, "/sys/fs/cgroup"); /* in a cgroup namespace */
	free(d);
	CHECK(jail_cg_own_dir("/sys/fs/cgroup", "/docker/c1", "/docker/c10") == NULL);
	CHECK(jail_cg_own_dir("/sys/fs/cgroup", "/docker/c1", "/other") == NULL);
}

static const char proc_cgroup[] = "9:name=systemd:/\n"
				  "4:memory:/process_api/abc\n"
				  "2:cpu,cpuacct:/x/y\n"
				  "0::/user.slice/daemon.service\n";

TEST(own_paths)
{
	char *p = jail_cg_own_path(proc_cgroup, "memory");
	CHECK_STR(p, "/process_api/abc");
	free(p);
	p = jail_cg_own_path(proc_cgroup, "cpuacct");
	CHECK_STR(p, "/x/y");
	free(p);
	p = jail_cg_own_path(proc_cgroup, NULL);
	CHECK_STR(p, "/user.slice/daemon.service");
	free(p);
	CHECK(jail_cg_own_path(proc_cgroup, "pids") == NULL);
	CHECK(jail_cg_own_path("4:memory\n", "memory") == NULL);
}

TEST(leaf_owner)
{
	pid_t pid = 0;
	CHECK(jail_cg_owner("1234-0-0a1b2c3d", &pid));
	CHECK_INT(pid, 1234);
	CHECK(!jail_cg_owner("cgroup.procs", &pid));
	CHECK(!jail_cg_owner("0-1-x", &pid));
	CHECK(!jail_cg_owner("1234", &pid));
	CHECK(!jail_cg_owner("99999999999-0-x", &pid));
}
