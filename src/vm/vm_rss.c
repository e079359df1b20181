#include "vm/vm_rss.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"

/* A chain of parents longer than this is not followed (QEMU sits two or
 * three levels under the daemon: keeper, jail). */
#define MAX_DEPTH 32

struct proc_entry {
	int pid;
	int ppid;
	bool qemu;
};

/* Up to `cap` - 1 bytes of a small /proc file, NUL-terminated; -1 when it
 * is gone (the process exited meanwhile). */
static ssize_t read_small(const char *path, char *buf, size_t cap)
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, cap - 1);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/* "pid (comm) state ppid ...": comm may hold spaces and parentheses, so
 * the fields after it start at the last ')'. */
static bool read_stat(const char *proc, int pid, struct proc_entry *e)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "%s/%d/stat", proc, pid);
	if (read_small(path, buf, sizeof(buf)) < 0)
		return false;
	char *open = strchr(buf, '('), *close = strrchr(buf, ')');
	if (open == NULL || close == NULL || close < open || sscanf(close + 1, " %*c %d", &e->ppid) != 1)
		return false;
	e->pid = pid;
	e->qemu = strncmp(open + 1, "qemu-system-", 12) == 0;
	return true;
}

static int by_pid(const void *a, const void *b)
{
	const struct proc_entry *x = a, *y = b;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

static bool descends_from(const struct proc_entry *all, size_t n, const struct proc_entry *e, int root)
{
	for (int depth = 0; depth < MAX_DEPTH && e != NULL; depth++) {
		if (e->ppid == root)
			return true;
		struct proc_entry key = { .pid = e->ppid };
		e = bsearch(&key, all, n, sizeof(*all), by_pid);
	}
	return false;
}

static uint64_t vm_rss_bytes(const char *proc, int pid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "%s/%d/status", proc, pid);
	if (read_small(path, buf, sizeof(buf)) < 0)
		return 0;
	const char *line = strstr(buf, "\nVmRSS:");
	uint64_t kib;
	return line != NULL && sscanf(line + 7, " %" SCNu64, &kib) == 1 ? kib * 1024 : 0;
}

int sbx_vm_rss_total(const char *proc, int root, uint64_t *bytes, unsigned *vms, sbx_error_t *err)
{
	cleanup_dir DIR *d = opendir(proc);
	if (d == NULL)
		return sbx_error_errno(err, errno, "%s", proc);
	cleanup_free struct proc_entry *all = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (*end != '\0' || pid <= 0 || pid > INT32_MAX)
			continue;
		if (n == SBX_VM_RSS_MAX_PROCS)
			return sbx_error_set(err, E2BIG, "%s: more than %d processes", proc, SBX_VM_RSS_MAX_PROCS);
		if (n == cap) {
			cap = cap == 0 ? 1024 : cap * 2;
			struct proc_entry *grown = realloc(all, cap * sizeof(*all));
			if (grown == NULL)
				return sbx_error_errno(err, ENOMEM, "%s", proc);
			all = grown;
		}
		if (read_stat(proc, (int)pid, &all[n]))
			n++;
	}
	qsort(all, n, sizeof(*all), by_pid);
	*bytes = 0;
	*vms = 0;
	for (size_t i = 0; i < n; i++) {
		if (all[i].qemu && descends_from(all, n, &all[i], root)) {
			*bytes += vm_rss_bytes(proc, all[i].pid);
			(*vms)++;
		}
	}
	return 0;
}
