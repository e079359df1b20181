#include "image/store_space.h"

#include <errno.h>
#include <sys/statvfs.h>

#include "common/scodes.h"

int sbx_store_space_avail(int fd, const char *dir, uint64_t *avail, sbx_error_t *err)
{
	struct statvfs st;
	if (fstatvfs(fd, &st) < 0)
		return sbx_error_errno(err, errno, "statvfs '%s'", dir);
	*avail = (uint64_t)st.f_bavail * st.f_frsize;
	return 0;
}

int sbx_store_space_check(int fd, const char *dir, uint64_t need, sbx_error_t *err)
{
	uint64_t avail;
	if (sbx_store_space_avail(fd, dir, &avail, err) < 0)
		return -1;
	if (avail >= need + SBX_STORE_SPACE_RESERVE)
		return 0;
	return sbx_error_scode(err, SBX_S_TRANSIENT,
			       "not enough free space in '%s': %llu MiB free, %llu MiB needed (%llu MiB for the "
			       "image, %llu MiB kept free for the host)",
			       dir, (unsigned long long)(avail >> 20),
			       (unsigned long long)((need + SBX_STORE_SPACE_RESERVE) >> 20),
			       (unsigned long long)(need >> 20), (unsigned long long)(SBX_STORE_SPACE_RESERVE >> 20));
}
