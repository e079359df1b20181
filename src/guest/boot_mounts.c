/* Filesystem bring-up of PID 1 (see boot_mounts.h). */
#include "guest/boot_mounts.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"

#define CGROUP_DIR "/sys/fs/cgroup/sandbox"

static int do_mount(const char *src, const char *dst, const char *type, unsigned long flags, const char *data,
		    sbx_error_t *err)
{
	if (mkdir(dst, 0755) < 0 && errno != EEXIST)
		return sbx_error_errno(err, errno, "mkdir %s", dst);
	if (mount(src, dst, type, flags, data) < 0)
		return sbx_error_errno(err, errno, "mount %s (%s) on %s", src, type, dst);
	return 0;
}

int boot_early_mounts(sbx_error_t *err)
{
	/* The kernel may have mounted devtmpfs already (DEVTMPFS_MOUNT). */
	if (mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755") < 0 && errno != EBUSY)
		return sbx_error_errno(err, errno, "mount devtmpfs on /dev");
	if (fcntl(2, F_GETFD) < 0) {
		int fd = open("/dev/console", O_RDWR | O_NOCTTY);
		if (fd < 0)
			return sbx_error_errno(err, errno, "open /dev/console");
		for (int i = 0; i < 3; i++)
			if (fd != i && dup2(fd, i) < 0)
				return sbx_error_errno(err, errno, "dup2 console");
		if (fd > 2)
			close(fd);
	}
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return sbx_error_errno(err, errno, "mount proc");
	if (mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return sbx_error_errno(err, errno, "mount sysfs");
	return 0;
}

int boot_switch_root(sbx_error_t *err)
{
	/* Mount points exist on the read-only boot disk (see meson.build). */
	if (mount("/dev/vdb", "/lower", "erofs", MS_RDONLY, NULL) < 0)
		return sbx_error_errno(err, errno, "mount image /dev/vdb (erofs) on /lower");
	if (mount("/dev/vdc", "/scratch", "ext4", MS_NOSUID | MS_NODEV, NULL) < 0)
		return sbx_error_errno(err, errno, "mount scratch /dev/vdc (ext4) on /scratch");
	if (mkdir("/scratch/upper", 0755) < 0 && errno != EEXIST)
		return sbx_error_errno(err, errno, "mkdir /scratch/upper");
	if (mkdir("/scratch/work", 0755) < 0 && errno != EEXIST)
		return sbx_error_errno(err, errno, "mkdir /scratch/work");
	/* redirect_dir=on: without it, renaming a directory that comes from
	 * the image fails with EXDEV (fs::mv, `mv` in an exec); with it the
	 * upper records the move in an xattr. */
	if (mount("overlay", "/newroot", "overlay", 0,
		  "lowerdir=/lower,upperdir=/scratch/upper,workdir=/scratch/work,redirect_dir=on") < 0)
		return sbx_error_errno(err, errno, "mount overlay root");
	if (chdir("/newroot") < 0)
		return sbx_error_errno(err, errno, "chdir /newroot");
	/* pivot_root(".", ".") stacks the old root under the new one; the
	 * lazy unmount then detaches it with everything mounted on it. */
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return sbx_error_errno(err, errno, "pivot_root");
	if (umount2(".", MNT_DETACH) < 0)
		return sbx_error_errno(err, errno, "detach old root");
	if (chdir("/") < 0)
		return sbx_error_errno(err, errno, "chdir /");
	return 0;
}

int boot_root_mounts(sbx_error_t *err)
{
	const unsigned long nse = MS_NOSUID | MS_NODEV | MS_NOEXEC;
	if (do_mount("proc", "/proc", "proc", nse, NULL, err) < 0 ||
	    do_mount("sysfs", "/sys", "sysfs", nse, NULL, err) < 0 ||
	    do_mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755", err) < 0 ||
	    do_mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "ptmxmode=666,mode=620,gid=5", err) < 0 ||
	    do_mount("shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777", err) < 0 ||
	    do_mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777", err) < 0 ||
	    do_mount("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755", err) < 0 ||
	    do_mount("cgroup2", "/sys/fs/cgroup", "cgroup2", nse, NULL, err) < 0)
		return -1;
	/* No udev: the links programs expect under /dev. */
	static const char *const links[][2] = {
		{ "/proc/self/fd", "/dev/fd" },	  { "/proc/self/fd/0", "/dev/stdin" },
		{ "/proc/self/fd/1", "/dev/stdout" }, { "/proc/self/fd/2", "/dev/stderr" },
	};
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++)
		if (symlink(links[i][0], links[i][1]) < 0 && errno != EEXIST)
			return sbx_error_errno(err, errno, "symlink %s", links[i][1]);
	return 0;
}

static int write_file(const char *path, const char *text, sbx_error_t *err)
{
	cleanup_close int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return sbx_error_errno(err, errno, "open %s", path);
	size_t n = strlen(text);
	if (write(fd, text, n) != (ssize_t)n)
		return sbx_error_errno(err, errno, "write %s", path);
	return 0;
}

/* The sandbox's processes get a small CPU weight beside init's (which stays
 * in the root cgroup at the default 100): a CPU burner in an exec never
 * keeps init from answering the host. */
#define SANDBOX_CPU_WEIGHT "10"

int boot_cgroup_prepare(sbx_error_t *err)
{
	if (write_file("/sys/fs/cgroup/cgroup.subtree_control", "+memory +pids", err) < 0)
		return -1;
	sbx_error_t cerr = NULL;
	bool cpu = write_file("/sys/fs/cgroup/cgroup.subtree_control", "+cpu", &cerr) == 0;
	if (!cpu)
		sbx_warn("init: no cpu controller (%s): execs share the CPU with init", sbx_error_msg(cerr));
	sbx_error_free(&cerr);
	if (mkdir(CGROUP_DIR, 0755) < 0 && errno != EEXIST)
		return sbx_error_errno(err, errno, "mkdir " CGROUP_DIR);
	if (cpu && write_file(CGROUP_DIR "/cpu.weight", SANDBOX_CPU_WEIGHT, err) < 0)
		return -1;
	/* Each exec's own cgroup gets pids.max (and an equal CPU share). */
	return write_file(CGROUP_DIR "/cgroup.subtree_control", cpu ? "+pids +cpu" : "+pids", err);
}

int boot_process_cgroup(uint64_t memory_bytes, sbx_error_t *err)
{
	if (memory_bytes != 0) {
		char v[32];
		snprintf(v, sizeof(v), "%" PRIu64, memory_bytes);
		/* No swap in the VM: the cap is the process memory limit, and
		 * the OOM killer acts inside the cgroup, never on init. */
		if (write_file(CGROUP_DIR "/memory.max", v, err) < 0)
			return -1;
	}
	int fd = open(CGROUP_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return sbx_error_errno(err, errno, "open " CGROUP_DIR);
	return fd;
}
