/* A probe under the real jail (as root, where the host allows a jail):
 * the same code that confines QEMU confines this test's child, which then
 * tries what a QEMU taken over by its guest would: read the host's /home
 * and /etc/shadow and another VM's state directory, write outside its own
 * disk, regain root or a capability, find the host's processes.  The child
 * reports each verdict through a pipe; the parent checks them and that the
 * jail's cgroup is gone after jail_release; and that the cgroup leaves of a
 * daemon that is gone are removed at start. */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "harness.h"
#include "jail/jail.h"
#include "jail/jail_cgroup.h"

#define REPORT_FD 3

static void say(const char *name, long v)
{
	char line[128];
	int n = snprintf(line, sizeof(line), "%s=%ld\n", name, v);
	if (write(REPORT_FD, line, (size_t)n) < 0)
		_exit(120);
}

/* errno of opening `path` (0 when it opened). */
static long open_errno(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return errno;
}

static void inside(const char *own_disk, const char *other_vm, const char *other_file)
{
	say("uid", (long)getuid());
	say("euid", (long)geteuid());
	say("gid", (long)getgid());
	say("groups", (long)getgroups(0, NULL));
	say("pid", (long)getpid());
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
	long caps = syscall(SYS_capget, &hdr, d) < 0 ? -1
						       : (long)(d[0].effective | d[0].permitted | d[0].inheritable |
								d[1].effective | d[1].permitted | d[1].inheritable);
	say("caps", caps);
	say("bounding_sys_admin", (long)prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0));
	say("no_new_privs", (long)prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
	int pdeath = 0;
	prctl(PR_GET_PDEATHSIG, &pdeath, 0, 0, 0);
	say("pdeath", pdeath); /* set again after the change of uid cleared it */
	say("home", open_errno("/home", O_RDONLY));
	say("shadow", open_errno("/etc/shadow", O_RDONLY));
	say("other_vm", open_errno(other_vm, O_RDONLY));
	say("other_file", open_errno(other_file, O_RDONLY));
	say("proc", open_errno("/proc/1/root", O_RDONLY));
	say("cgroupfs", open_errno("/sys/fs/cgroup", O_RDONLY));
	say("own_disk", open_errno(own_disk, O_RDWR));
	say("usr_write", open_errno("/usr/sbx-jail-probe", O_WRONLY | O_CREAT));
	say("root_write", open_errno("/sbx-jail-probe", O_WRONLY | O_CREAT));
	say("dev_null", open_errno("/dev/null", O_RDWR));
	say("setuid0", syscall(SYS_setresuid, 0, 0, 0) < 0 ? errno : 0);
	say("kill_init", kill(1, 0) == 0 ? 0 : errno); /* itself: PID 1 of its namespace */
	say("chdir_up", chdir("/..") == 0 && open_errno("/home", O_RDONLY) == ENOENT ? 1 : 0);
	char host[64] = "";
	gethostname(host, sizeof(host));
	say("hostname_jail", strcmp(host, "jail") == 0);
	_exit(0);
}

static long value(const char *report, const char *name)
{
	char key[64];
	snprintf(key, sizeof(key), "\n%s=", name);
	const char *p = strstr(report, key);
	return p != NULL ? strtol(p + strlen(key), NULL, 10) : -999;
}

static void write_file(const char *path, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0 || write(fd, "secret\n", 7) != 7)
		abort();
	close(fd);
}

TEST(jailed_child_cannot_reach_the_host)
{
	if (geteuid() != 0) {
		sbx_test_skip("needs root");
		return;
	}
	sbx_error_t err = NULL;
	struct sbx_jail_host *h = sbx_jail_host_new(SBX_JAIL_AUTO, SBX_JAIL_UID_BASE_DEFAULT, &err);
	CHECK(h != NULL);
	if (!sbx_jail_host_active(h)) {
		sbx_test_skip(sbx_jail_host_describe(h));
		sbx_jail_host_free(h);
		return;
	}
	char state[] = "/tmp/sbx-jail-probe.XXXXXX";
	CHECK(mkdtemp(state) != NULL);
	char mine[128], other[128], disk[160], other_file[160], name[64];
	snprintf(mine, sizeof(mine), "%s/%d-0-mine", state, (int)getpid());
	snprintf(other, sizeof(other), "%s/%d-1-other", state, (int)getpid());
	snprintf(disk, sizeof(disk), "%s/scratch.ext4", mine);
	snprintf(other_file, sizeof(other_file), "%s/scratch.ext4", other);
	snprintf(name, sizeof(name), "%d-probe-0", (int)getpid());
	CHECK(mkdir(mine, 0700) == 0 && mkdir(other, 0700) == 0);
	write_file(disk, 0600);
	write_file(other_file, 0644);
	const char *rw[] = { disk };
	struct jail_request r = { .name = name, .memory_mib = 64, .cpus = 1, .fsize_bytes = 1 << 20,
				  .rw_files = rw, .n_rw = 1 };
	struct jail *j = jail_prepare(h, &r, &err);
	CHECK(j != NULL);
	int p[2];
	CHECK(pipe(p) == 0);
	fflush(stdout);
	/* A process of its own forks the jailed child, as the keeper does. */
	pid_t forker = fork();
	if (forker == 0) {
		pid_t child = jail_fork(j);
		if (child == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
			if (dup2(p[1], REPORT_FD) < 0 || jail_enter(j, REPORT_FD + 1) < 0)
				_exit(121);
			inside(disk, other, other_file);
		}
		int st = 0;
		waitpid(child, &st, 0);
		_exit(child > 0 && WIFEXITED(st) ? WEXITSTATUS(st) : 122);
	}
	close(p[1]);
	char report[4096] = "\n";
	size_t got = 1;
	ssize_t n;
	while (got < sizeof(report) - 1 && (n = read(p[0], report + got, sizeof(report) - 1 - got)) > 0)
		got += (size_t)n;
	report[got] = '\0';
	close(p[0]);
	int st = 0;
	waitpid(forker, &st, 0);
	uid_t uid = jail_uid(j);
	/* The jail's leaves, wherever this host's hierarchy puts them (one per
	 * controller on v1, one on v2): each must exist before the release,
	 * so that "gone after" is not true of a path that never was. */
	struct jail_cg_host cgh;
	char why[512], leaf[JAIL_CG_MAX_DIRS][512];
	CHECK_INT(jail_cg_probe(&cgh, why, sizeof(why)), 0);
	CHECK(cgh.n > 0);
	struct stat sb;
	int leaves_there = 0, leaves_gone = 0;
	for (int i = 0; i < cgh.n; i++) {
		snprintf(leaf[i], sizeof(leaf[i]), "%s/%s", cgh.parent[i], name);
		leaves_there += stat(leaf[i], &sb) == 0 && S_ISDIR(sb.st_mode);
	}
	jail_release(j);
	for (int i = 0; i < cgh.n; i++)
		leaves_gone += stat(leaf[i], &sb) < 0 && errno == ENOENT;
	int n_leaves = cgh.n;
	jail_cg_host_free(&cgh);
	unlink(disk);
	unlink(other_file);
	rmdir(mine);
	rmdir(other);
	rmdir(state);
	sbx_jail_host_free(h);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(uid >= SBX_JAIL_UID_BASE_DEFAULT);
	CHECK_INT(value(report, "uid"), uid);
	CHECK_INT(value(report, "euid"), uid);
	CHECK_INT(value(report, "gid"), uid);
	CHECK_INT(value(report, "groups"), 0);
	CHECK_INT(value(report, "pid"), 1);
	CHECK_INT(value(report, "caps"), 0);
	CHECK_INT(value(report, "bounding_sys_admin"), 0);
	CHECK_INT(value(report, "no_new_privs"), 1);
	CHECK_INT(value(report, "pdeath"), SIGKILL);
	CHECK_INT(value(report, "home"), ENOENT);
	CHECK_INT(value(report, "shadow"), ENOENT);
	CHECK_INT(value(report, "other_vm"), ENOENT);
	CHECK_INT(value(report, "other_file"), ENOENT);
	CHECK_INT(value(report, "proc"), ENOENT);
	CHECK_INT(value(report, "cgroupfs"), ENOENT);
	CHECK_INT(value(report, "own_disk"), 0);
	CHECK_INT(value(report, "usr_write"), EROFS);
	CHECK_INT(value(report, "root_write"), EROFS);
	CHECK_INT(value(report, "dev_null"), 0);
	CHECK_INT(value(report, "setuid0"), EPERM);
	CHECK_INT(value(report, "kill_init"), 0);
	CHECK_INT(value(report, "chdir_up"), 1);
	CHECK_INT(value(report, "hostname_jail"), 1);
	CHECK_INT(leaves_there, n_leaves);
	CHECK_INT(leaves_gone, n_leaves);
}

TEST(leftover_leaves_of_a_dead_daemon_are_removed)
{
	if (geteuid() != 0) {
		sbx_test_skip("needs root");
		return;
	}
	sbx_error_t err = NULL;
	struct sbx_jail_host *h = sbx_jail_host_new(SBX_JAIL_AUTO, SBX_JAIL_UID_BASE_DEFAULT, &err);
	CHECK(h != NULL);
	if (!sbx_jail_host_active(h)) {
		sbx_test_skip(sbx_jail_host_describe(h));
		sbx_jail_host_free(h);
		return;
	}
	/* A daemon that is gone: a child that exited and was reaped. */
	pid_t dead = fork();
	if (dead == 0)
		_exit(0);
	waitpid(dead, NULL, 0);
	char why[512], name[64], live_name[64];
	snprintf(name, sizeof(name), "%d-0-left", (int)dead);
	snprintf(live_name, sizeof(live_name), "%d-0-live", (int)getpid());
	struct jail_cg_host cgh;
	CHECK_INT(jail_cg_probe(&cgh, why, sizeof(why)), 0);
	struct jail_cg_limits l;
	jail_cg_limits(64, 1, &l);
	struct jail_cg left, live;
	CHECK_INT(jail_cg_create(&cgh, name, &l, &left, &err), 0);
	CHECK_INT(jail_cg_create(&cgh, live_name, &l, &live, &err), 0);
	/* A dead daemon's leaves under every controller but the first, as a
	 * daemon started in another memory cgroup leaves its cpu and pids
	 * leaves where this one's are (v1; v2 has one parent). */
	char partial[JAIL_CG_MAX_DIRS][512];
	int n_partial = 0;
	struct stat st;
	for (int i = 1; i < cgh.n; i++) {
		snprintf(partial[n_partial], sizeof(partial[0]), "%s/%d-1-net", cgh.parent[i], (int)dead);
		CHECK(mkdir(partial[n_partial], 0755) == 0);
		n_partial++;
	}
	sbx_jail_remove_leftovers(h);
	bool left_gone = true, live_kept = true, partial_gone = true;
	for (int i = 0; i < left.n; i++) {
		left_gone = left_gone && stat(left.leaf[i], &st) < 0;
		live_kept = live_kept && stat(live.leaf[i], &st) == 0;
	}
	for (int i = 0; i < n_partial; i++) {
		partial_gone = partial_gone && stat(partial[i], &st) < 0;
		rmdir(partial[i]);
	}
	jail_cg_kill(&left);
	jail_cg_kill(&live);
	jail_cg_free(&left);
	jail_cg_free(&live);
	jail_cg_host_free(&cgh);
	sbx_jail_host_free(h);
	CHECK(left_gone);
	CHECK(live_kept); /* its daemon (this test) is alive */
	CHECK(partial_gone);
}
