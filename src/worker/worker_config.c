/* config_dir reaches the guest as a copy: microvm has 8 virtio-mmio
 * transports and a networked worker VM uses 7 (console and control, rng,
 * balloon, net, three disks), which leaves room for one share only: the
 * worker's own directory.  So the directory's regular files (bounded) are
 * written read-only into WORKER_CONFIG_GUEST_DIR at each start, before the
 * worker's process runs.  Read through the directory pinned when the
 * start checked it (worker_start.c): every file opened without following
 * a symlink and without blocking (a FIFO swapped in after the listing
 * neither hangs the supervisor nor is read), then checked on its own
 * descriptor. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "vm/vm.h"
#include "worker/worker_env.h"
#include "worker/worker_launch.h"

#define CONFIG_MAX_FILES 64
#define CONFIG_MAX_BYTES (4u * 1024u * 1024u) /* all files together */
#define CONFIG_WRITE_MS 60000

int worker_config_read(int dirfd, const char *name, size_t max, char **out, size_t *len, sbx_error_t *err)
{
	cleanup_close int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return sbx_error_errno(err, errno, "config_dir: %s", name);
	if (!S_ISREG(st.st_mode))
		return sbx_error_set(err, EINVAL, "config_dir: %s changed into a special file while it was read", name);
	if ((uint64_t)st.st_size > max)
		return sbx_error_set(err, EFBIG, "config_dir: the files exceed %u bytes together", CONFIG_MAX_BYTES);
	char *buf = malloc((size_t)st.st_size + 1);
	if (buf == NULL)
		return sbx_error_errno(err, ENOMEM, "config_dir: %s", name);
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(buf);
			return n < 0 ? sbx_error_errno(err, errno, "config_dir: %s", name)
				     : sbx_error_set(err, EIO, "config_dir: %s shrank while read", name);
		}
		got += (size_t)n;
	}
	*out = buf;
	*len = got;
	return 0;
}

int worker_config_copy(const struct worker_launch *l, struct sbx_vm *vm, sbx_error_t *err)
{
	if (l->config_dir == NULL)
		return 0;
	/* A directory of its own: fdopendir takes the descriptor it gets. */
	int fd = openat(l->config_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cleanup_dir DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (d == NULL) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return sbx_error_errno(err, e, "config_dir %s", l->config_dir);
	}
	size_t files = 0, bytes = 0;
	struct dirent *e;
	while ((errno = 0, e = readdir(d)) != NULL) {
		struct stat st;
		if (e->d_name[0] == '.' && (e->d_name[1] == '\0' || (e->d_name[1] == '.' && e->d_name[2] == '\0')))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode)) {
			sbx_debug("worker %s: config_dir: %s is not a regular file: not copied", l->rec.worker, e->d_name);
			continue;
		}
		if (++files > CONFIG_MAX_FILES)
			return sbx_error_set(err, EFBIG, "config_dir %s holds more than %u files", l->config_dir,
					     CONFIG_MAX_FILES);
		char *data = NULL;
		size_t len = 0;
		if (worker_config_read(dirfd(d), e->d_name, CONFIG_MAX_BYTES - bytes, &data, &len, err) < 0)
			return -1;
		bytes += len;
		char path[sizeof(WORKER_CONFIG_GUEST_DIR) + 256 + 1];
		snprintf(path, sizeof(path), WORKER_CONFIG_GUEST_DIR "/%s", e->d_name);
		int rc = sbx_vm_write_file(vm, path, 0444, true, data, len, sbx_now_ms() + CONFIG_WRITE_MS, err);
		free(data);
		if (rc < 0)
			return sbx_error_prefix(err, "config_dir: %s", path);
	}
	if (errno != 0)
		return sbx_error_errno(err, errno, "config_dir %s", l->config_dir);
	return 0;
}
