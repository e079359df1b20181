#include "worker/worker_disk.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vm/disk.h"
#include "worker/worker_record.h"

int worker_data_disk_ensure(const char *dir, uint32_t mib, bool *created, sbx_error_t *err)
{
	*created = false;
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s/" WORKER_DATA_DISK, dir);
	if (n < 0 || n >= (int)sizeof(path))
		return sbx_error_set(err, ENAMETOOLONG, "%s: path too long", dir);
	struct stat st;
	if (lstat(path, &st) == 0) {
		if (!S_ISREG(st.st_mode))
			return sbx_error_set(err, EINVAL, "%s is not a regular file", path);
		return 0;
	}
	if (errno != ENOENT)
		return sbx_error_errno(err, errno, "stat %s", path);
	/* Built beside it and linked into place: a daemon killed half way
	 * leaves no half-made disk that a later prepare would keep, and of two
	 * concurrent prepares one links, the other finds the disk there. */
	static atomic_uint seq;
	char tmp[PATH_MAX];
	n = snprintf(tmp, sizeof(tmp), "%s.new-%d-%u", path, (int)getpid(), atomic_fetch_add(&seq, 1));
	if (n < 0 || n >= (int)sizeof(tmp))
		return sbx_error_set(err, ENAMETOOLONG, "%s: path too long", dir);
	if (disk_scratch_create(tmp, (uint64_t)mib << 20, err) < 0)
		return sbx_error_prefix(err, "data disk of %s", dir);
	int rc = link(tmp, path);
	int saved = errno;
	unlink(tmp);
	if (rc < 0 && saved != EEXIST)
		return sbx_error_errno(err, saved, "link %s", path);
	*created = rc == 0;
	return 0;
}
