#include "vm/leftovers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/path.h"
#include "common/state_dir.h"

#define CMDLINE_MAX (64 * 1024)

bool leftover_owner(const char *name, pid_t *pid)
{
	char *end;
	errno = 0;
	long v = strtol(name, &end, 10);
	if (errno != 0 || end == name || *end != '-' || v <= 0 || v > INT_MAX || name[0] == '+' || name[0] == ' ')
		return false;
	*pid = (pid_t)v;
	return true;
}

bool leftover_is_vm_process(const char *cmdline, size_t len, const char *vmdir)
{
	if (len == 0 || cmdline[len - 1] != '\0')
		return false;
	const char *argv0 = cmdline;
	const char *base = strrchr(argv0, '/');
	base = base != NULL ? base + 1 : argv0;
	if (strncmp(base, "qemu-system-", 12) != 0)
		return false;
	size_t dlen = strlen(vmdir);
	for (const char *a = cmdline; a < cmdline + len; a += strlen(a) + 1) {
		/* The path must be followed by '/': /x/vms/1-2 is not /x/vms/1-23. */
		for (const char *p = strstr(a, vmdir); p != NULL; p = strstr(p + 1, vmdir)) {
			if (p[dlen] == '/')
				return true;
		}
	}
	return false;
}

static bool pid_alive(pid_t pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}

static ssize_t read_cmdline(pid_t pid, char *buf, size_t cap)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t got = 0;
	while (got < cap) {
		ssize_t n = read(fd, buf + got, cap - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

static void kill_vm_processes(const char *vmdir)
{
	cleanup_dir DIR *proc = opendir("/proc");
	cleanup_free char *buf = malloc(CMDLINE_MAX);
	if (proc == NULL || buf == NULL)
		return;
	struct dirent *de;
	while ((de = readdir(proc)) != NULL) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (*end != '\0' || pid <= 1 || pid == getpid())
			continue;
		ssize_t n = read_cmdline((pid_t)pid, buf, CMDLINE_MAX);
		if (n <= 0 || !leftover_is_vm_process(buf, (size_t)n, vmdir))
			continue;
		if (kill((pid_t)pid, SIGKILL) == 0)
			sbx_info("leftovers: killed QEMU %ld of %s", pid, vmdir);
	}
}

/* Removes the plain files of a VM directory and the directory itself. */
static bool remove_vm_dir(int vms_fd, const char *name, const char *path)
{
	int fd = openat(vms_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	cleanup_dir DIR *d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return false;
	}
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (unlinkat(fd, de->d_name, 0) < 0)
			sbx_warn("leftovers: cannot remove %s/%s: %s", path, de->d_name, strerror(errno));
	}
	if (unlinkat(vms_fd, name, AT_REMOVEDIR) < 0) {
		sbx_warn("leftovers: cannot remove %s: %s", path, strerror(errno));
		return false;
	}
	return true;
}

unsigned sbx_vm_remove_leftovers_of(const char *subdir)
{
	sbx_error_t err = NULL;
	cleanup_free char *root = sbx_state_subdir(subdir, &err);
	if (root == NULL) {
		sbx_warn("leftovers: %s", sbx_error_msg(err));
		sbx_error_free(&err);
		return 0;
	}
	cleanup_dir DIR *d = opendir(root);
	if (d == NULL)
		return 0;
	unsigned removed = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		pid_t owner;
		if (!leftover_owner(de->d_name, &owner) || pid_alive(owner))
			continue;
		cleanup_free char *path = sbx_path_join(root, de->d_name);
		if (path == NULL)
			continue;
		kill_vm_processes(path);
		if (remove_vm_dir(dirfd(d), de->d_name, path)) {
			sbx_info("leftovers: removed %s (its daemon, pid %d, is gone)", path, (int)owner);
			removed++;
		}
	}
	return removed;
}

unsigned sbx_vm_remove_leftovers(void)
{
	return sbx_vm_remove_leftovers_of("vms");
}
