#include "jail/jail_ids.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <unistd.h>

#include "common/cleanup.h"

int jail_uid_acquire(const char *dir, uint32_t base, uint32_t count, uint32_t *uid, int *lock_fd,
		     sbx_error_t *err)
{
	cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return sbx_error_errno(err, errno, "jail uids: open %s", dir);
	for (uint32_t i = 0; i < count; i++) {
		char name[16];
		snprintf(name, sizeof(name), "%u", base + i);
		int fd = openat(dfd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return sbx_error_errno(err, errno, "jail uids: open %s/%s", dir, name);
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			*uid = base + i;
			*lock_fd = fd;
			return 0;
		}
		int e = errno;
		close(fd);
		if (e != EWOULDBLOCK)
			return sbx_error_errno(err, e, "jail uids: lock %s/%s", dir, name);
	}
	return sbx_error_set(err, EAGAIN, "jail uids: all %u uids from %u are in use", count, base);
}

void jail_uid_release(int lock_fd)
{
	if (lock_fd >= 0)
		close(lock_fd);
}
