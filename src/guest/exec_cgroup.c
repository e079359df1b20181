#include "guest/exec_cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"

static int write_at(int dir_fd, const char *path, const char *text)
{
	cleanup_close int fd = openat(dir_fd, path, O_WRONLY | O_CLOEXEC);
	size_t n = strlen(text);
	return fd >= 0 && write(fd, text, n) == (ssize_t)n ? 0 : -1;
}

/* Removes the cgroups of earlier execs whose processes are all gone; the
 * kernel refuses (EBUSY) those still populated. */
static void sweep(int parent_fd)
{
	int fd = openat(parent_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cleanup_dir DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (d == NULL) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_type == DT_DIR && e->d_name[0] == 'e')
			unlinkat(parent_fd, e->d_name, AT_REMOVEDIR);
	}
}

int exec_cgroup_create(int parent_fd, uint64_t pids_max, struct exec_cgroup *cg, sbx_error_t *err)
{
	static uint64_t next;
	cg->procs_fd = -1;
	cg->name[0] = '\0';
	if (parent_fd < 0)
		return 0;
	sweep(parent_fd);
	snprintf(cg->name, sizeof(cg->name), "e%" PRIu64, ++next);
	if (mkdirat(parent_fd, cg->name, 0755) < 0) {
		int e = errno;
		cg->name[0] = '\0';
		return sbx_error_errno(err, e, "exec cgroup");
	}
	char path[64];
	if (pids_max > 0) {
		char v[24];
		snprintf(path, sizeof(path), "%s/pids.max", cg->name);
		snprintf(v, sizeof(v), "%" PRIu64, pids_max);
		if (write_at(parent_fd, path, v) < 0) {
			int e = errno;
			exec_cgroup_release(parent_fd, cg);
			return sbx_error_errno(err, e, "exec cgroup pids.max");
		}
	}
	snprintf(path, sizeof(path), "%s/cgroup.procs", cg->name);
	if ((cg->procs_fd = openat(parent_fd, path, O_WRONLY | O_CLOEXEC)) < 0) {
		int e = errno;
		exec_cgroup_release(parent_fd, cg);
		return sbx_error_errno(err, e, "exec cgroup procs");
	}
	return 0;
}

void exec_cgroup_kill(int parent_fd, const struct exec_cgroup *cg)
{
	if (parent_fd < 0 || cg->name[0] == '\0')
		return;
	char path[64];
	snprintf(path, sizeof(path), "%s/cgroup.kill", cg->name);
	if (write_at(parent_fd, path, "1") < 0 && errno != ENOENT)
		sbx_warn("guest: kill exec cgroup %s: %s", cg->name, strerror(errno));
}

void exec_cgroup_release(int parent_fd, struct exec_cgroup *cg)
{
	if (cg->procs_fd >= 0)
		close(cg->procs_fd);
	cg->procs_fd = -1;
	if (parent_fd >= 0 && cg->name[0] != '\0')
		unlinkat(parent_fd, cg->name, AT_REMOVEDIR);
	cg->name[0] = '\0';
}
