#include "vm/disk.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/state_dir.h"
#include "vm/run_tool.h"

int disk_erofs_from_dir(const char *dir, const char *out, sbx_error_t *err)
{
	struct stat st;
	if (stat(dir, &st) < 0)
		return sbx_error_errno(err, errno, "rootfs %s", dir);
	if (!S_ISDIR(st.st_mode))
		return sbx_error_set(err, ENOTDIR, "rootfs %s is not a directory", dir);
	cleanup_free char *tmp = NULL;
	if (asprintf(&tmp, "%s.%ld.tmp", out, (long)getpid()) < 0) {
		tmp = NULL;
		return sbx_error_errno(err, ENOMEM, "erofs path");
	}
	/* Uncompressed: the guest reads it with no decompression cost, and
	 * mkfs.erofs keeps uid/gid/mode by default. */
	char *argv[] = { "mkfs.erofs", "--quiet", "-x-1", tmp, (char *)dir, NULL };
	if (run_tool(argv, err) < 0) {
		unlink(tmp);
		return sbx_error_prefix(err, "build erofs image from %s", dir);
	}
	if (rename(tmp, out) < 0) {
		int e = errno;
		unlink(tmp);
		return sbx_error_errno(err, e, "rename %s", tmp);
	}
	return 0;
}

/* mkfs.ext4 into a fresh sparse file at `path` (must not exist). */
static int scratch_mkfs(const char *path, uint64_t size, sbx_error_t *err)
{
	cleanup_close int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return sbx_error_errno(err, errno, "create %s", path);
	if (ftruncate(fd, (off_t)size) < 0) {
		int e = errno;
		unlink(path);
		return sbx_error_errno(err, e, "size %s", path);
	}
	/* No journal: the disk lives as long as one VM, so crash consistency
	 * buys nothing.  The inode tables are marked zeroed at mkfs time (the
	 * discard punches the fresh file's blocks, which then read as zeros,
	 * so the file stays sparse): with lazy init instead, every guest ran
	 * ext4lazyinit, writing 32 MiB of zeros under emulation. */
	char *argv[] = { "mkfs.ext4", "-q", "-F", "-O", "^has_journal", "-E",
			 "lazy_itable_init=0,lazy_journal_init=1", "-m", "0", (char *)path, NULL };
	if (run_tool(argv, err) < 0) {
		unlink(path);
		return -1;
	}
	return 0;
}

/* The template of one size: built once under the state directory (a
 * private temp name, then an atomic rename, so racing builders each
 * install a complete one). */
static char *scratch_template(uint64_t size, sbx_error_t *err)
{
	cleanup_free char *dir = sbx_state_subdir("scratch", err);
	if (dir == NULL)
		return NULL;
	char *tpl = NULL;
	/* v2: inode tables marked zeroed (see scratch_mkfs). */
	if (asprintf(&tpl, "%s/ext4-v2-%llu.img", dir, (unsigned long long)size) < 0) {
		sbx_error_errno(err, ENOMEM, "template path");
		return NULL;
	}
	struct stat st;
	if (stat(tpl, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == size)
		return tpl;
	cleanup_free char *tmp = NULL;
	uint32_t rnd = 0;
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = (uint32_t)time(NULL);
	if (asprintf(&tmp, "%s.%ld-%08x.tmp", tpl, (long)getpid(), rnd) < 0) {
		tmp = NULL;
		sbx_error_errno(err, ENOMEM, "template path");
		goto fail;
	}
	if (scratch_mkfs(tmp, size, err) < 0)
		goto fail;
	if (rename(tmp, tpl) < 0) {
		sbx_error_errno(err, errno, "rename %s", tmp);
		unlink(tmp);
		goto fail;
	}
	return tpl;
fail:
	free(tpl);
	return NULL;
}

/* Copies the data extents of `from` (SEEK_DATA/SEEK_HOLE) and leaves the
 * holes as holes: a 2 GiB template holds about 1 MiB of data. */
static int copy_sparse(int in, int out, off_t size, sbx_error_t *err)
{
	off_t pos = 0;
	for (;;) {
		off_t data = lseek(in, pos, SEEK_DATA);
		if (data < 0 && errno == ENXIO)
			break;
		if (data < 0)
			return sbx_error_errno(err, errno, "seek data");
		off_t hole = lseek(in, data, SEEK_HOLE);
		if (hole < 0)
			return sbx_error_errno(err, errno, "seek hole");
		off_t src = data, dst = data;
		while (src < hole) {
			ssize_t n = copy_file_range(in, &src, out, &dst, (size_t)(hole - src), 0);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return sbx_error_errno(err, n < 0 ? errno : EIO, "copy");
		}
		pos = hole;
	}
	if (ftruncate(out, size) < 0)
		return sbx_error_errno(err, errno, "size");
	return 0;
}

int disk_clone(const char *from, const char *to, sbx_error_t *err)
{
	cleanup_close int in = open(from, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (in < 0 || fstat(in, &st) < 0)
		return sbx_error_errno(err, errno, "open %s", from);
	int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (out < 0)
		return sbx_error_errno(err, errno, "create %s", to);
	/* A reflink shares the blocks until the guest writes; where the
	 * filesystem cannot, copy the data blocks and keep the holes. */
	int rc = ioctl(out, FICLONE, in) == 0 ? 0 : copy_sparse(in, out, st.st_size, err);
	if (close(out) < 0 && rc == 0)
		rc = sbx_error_errno(err, errno, "close %s", to);
	if (rc < 0) {
		unlink(to);
		return sbx_error_prefix(err, "copy %s to %s", from, to);
	}
	return 0;
}

int disk_scratch_create(const char *path, uint64_t size, sbx_error_t *err)
{
	cleanup_free char *tpl = scratch_template(size, err);
	if (tpl == NULL)
		return sbx_error_prefix(err, "scratch disk template");
	return disk_clone(tpl, path, err);
}

bool disk_direct_io(const char *path)
{
	cleanup_close int fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	return fd >= 0;
}
