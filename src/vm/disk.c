#include "vm/disk.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
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

int disk_scratch_create(const char *path, uint64_t size, sbx_error_t *err)
{
	cleanup_close int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return sbx_error_errno(err, errno, "create %s", path);
	if (ftruncate(fd, (off_t)size) < 0) {
		int e = errno;
		unlink(path);
		return sbx_error_errno(err, e, "size %s", path);
	}
	/* Lazy init and no journal: the disk lives as long as one VM, so
	 * crash consistency buys nothing and the writes cost boot time. */
	char *argv[] = { "mkfs.ext4", "-q", "-F", "-O", "^has_journal", "-E",
			 "lazy_itable_init=1,lazy_journal_init=1,nodiscard", "-m", "0", (char *)path, NULL };
	if (run_tool(argv, err) < 0) {
		unlink(path);
		return -1;
	}
	return 0;
}
