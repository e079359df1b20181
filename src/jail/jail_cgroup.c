#include "jail/jail_cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"

#define KILL_ROUNDS 100 /* x 10 ms: processes in the leaf leaving after SIGKILL */

void jail_cg_limits(uint64_t memory_mib, unsigned cpus, struct jail_cg_limits *out)
{
	out->memory_bytes = memory_mib << 20;
	out->pids_max = JAIL_CG_PIDS_MAX;
	out->cpu_period_us = JAIL_CG_PERIOD_US;
	out->cpu_quota_us = (uint64_t)(cpus > 0 ? cpus : 1) * JAIL_CG_PERIOD_US;
}

static void set(struct jail_cg_setting *s, int dir, const char *file, bool optional, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void set(struct jail_cg_setting *s, int dir, const char *file, bool optional, const char *fmt, ...)
{
	s->dir = dir;
	s->file = file;
	s->optional = optional;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->value, sizeof(s->value), fmt, ap); /* two u64 at most: fits */
	va_end(ap);
}

size_t jail_cg_settings(enum jail_cg_version v, const struct jail_cg_limits *l,
			struct jail_cg_setting out[JAIL_CG_MAX_SETTINGS])
{
	size_t n = 0;
	uint64_t mem = l->memory_bytes;
	if (v == JAIL_CG_V2) {
		set(&out[n++], 0, "memory.max", false, "%llu", (unsigned long long)mem);
		set(&out[n++], 0, "memory.swap.max", true, "0");
		set(&out[n++], 0, "memory.oom.group", false, "1");
		set(&out[n++], 0, "pids.max", false, "%llu", (unsigned long long)l->pids_max);
		set(&out[n++], 0, "cpu.max", false, "%llu %llu", (unsigned long long)l->cpu_quota_us,
		    (unsigned long long)l->cpu_period_us);
	} else if (v == JAIL_CG_V1) {
		/* The memory limit first: memsw may never be below it. */
		set(&out[n++], 0, "memory.limit_in_bytes", false, "%llu", (unsigned long long)mem);
		set(&out[n++], 0, "memory.memsw.limit_in_bytes", true, "%llu", (unsigned long long)mem);
		set(&out[n++], 0, "memory.swappiness", true, "0");
		set(&out[n++], 1, "pids.max", false, "%llu", (unsigned long long)l->pids_max);
		set(&out[n++], 2, "cpu.cfs_period_us", false, "%llu", (unsigned long long)l->cpu_period_us);
		set(&out[n++], 2, "cpu.cfs_quota_us", false, "%llu", (unsigned long long)l->cpu_quota_us);
	}
	return n;
}

static int write_file(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t len = strlen(value);
	ssize_t w = write(fd, value, len);
	int e = errno;
	close(fd);
	if (w == (ssize_t)len)
		return 0;
	errno = w < 0 ? e : EIO;
	return -1;
}

static char *join(const char *a, const char *b)
{
	char *s = NULL;
	return asprintf(&s, "%s/%s", a, b) < 0 ? NULL : s;
}

int jail_cg_create(const struct jail_cg_host *h, const char *name, const struct jail_cg_limits *l,
		   struct jail_cg *cg, sbx_error_t *err)
{
	*cg = (struct jail_cg){ .v = h->v };
	for (int i = 0; i < h->n; i++) {
		cg->leaf[i] = join(h->parent[i], name);
		cg->procs[i] = cg->leaf[i] != NULL ? join(cg->leaf[i], "cgroup.procs") : NULL;
		if (cg->procs[i] == NULL) {
			jail_cg_free(cg);
			return sbx_error_errno(err, ENOMEM, "cgroup path");
		}
		cg->n = i + 1;
		if (mkdir(cg->leaf[i], 0755) < 0) {
			int e = errno;
			free(cg->procs[i]);
			free(cg->leaf[i]);
			cg->procs[i] = cg->leaf[i] = NULL;
			cg->n = i;
			jail_cg_kill(cg);
			jail_cg_free(cg);
			return sbx_error_errno(err, e, "jail: mkdir %s/%s", h->parent[i], name);
		}
	}
	if (h->v == JAIL_CG_V2 && (cg->kill = join(cg->leaf[0], "cgroup.kill")) == NULL) {
		jail_cg_kill(cg);
		jail_cg_free(cg);
		return sbx_error_errno(err, ENOMEM, "cgroup path");
	}
	struct jail_cg_setting s[JAIL_CG_MAX_SETTINGS];
	size_t n = jail_cg_settings(h->v, l, s);
	for (size_t i = 0; i < n; i++) {
		cleanup_free char *path = join(cg->leaf[s[i].dir], s[i].file);
		if (path == NULL || (write_file(path, s[i].value) < 0 && !(s[i].optional && errno == ENOENT))) {
			int e = path == NULL ? ENOMEM : errno;
			jail_cg_kill(cg);
			jail_cg_free(cg);
			return sbx_error_errno(err, e, "jail: cgroup %s = %s", path != NULL ? path : s[i].file,
					       s[i].value);
		}
	}
	return 0;
}

int jail_cg_join(const struct jail_cg *cg)
{
	for (int i = 0; i < cg->n; i++) {
		/* "0" is the writer itself (a pid would be read in the
		 * writer's PID namespace). */
		if (write_file(cg->procs[i], "0") < 0)
			return -1;
	}
	return 0;
}

static void pause_10ms(void)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	nanosleep(&ts, NULL);
}

/* SIGKILL to every pid listed; true when the file listed none. */
static bool kill_listed(const char *procs)
{
	int fd = open(procs, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	char buf[4096];
	bool empty = true;
	long pid = 0;
	bool in_num = false;
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] >= '0' && buf[i] <= '9') {
				if (pid < INT_MAX / 10)
					pid = pid * 10 + (buf[i] - '0');
				in_num = true;
			} else {
				if (in_num && pid > 1) {
					kill((pid_t)pid, SIGKILL);
					empty = false;
				}
				pid = 0;
				in_num = false;
			}
		}
	}
	if (in_num && pid > 1) {
		kill((pid_t)pid, SIGKILL);
		empty = false;
	}
	close(fd);
	return empty;
}

void jail_cg_kill(const struct jail_cg *cg)
{
	if (cg->kill != NULL)
		write_file(cg->kill, "1"); /* a kernel before 5.14 has none: below */
	for (int round = 0; round < KILL_ROUNDS; round++) {
		bool empty = true;
		for (int i = 0; i < cg->n; i++)
			empty = kill_listed(cg->procs[i]) && empty;
		if (empty)
			break;
		pause_10ms();
	}
	for (int i = 0; i < cg->n; i++) {
		/* A killed process leaves its cgroup a moment after it died. */
		for (int round = 0; round < KILL_ROUNDS && rmdir(cg->leaf[i]) < 0 && errno == EBUSY; round++)
			pause_10ms();
	}
}

void jail_cg_free(struct jail_cg *cg)
{
	for (int i = 0; i < JAIL_CG_MAX_DIRS; i++) {
		free(cg->leaf[i]);
		free(cg->procs[i]);
		cg->leaf[i] = cg->procs[i] = NULL;
	}
	free(cg->kill);
	cg->kill = NULL;
	cg->n = 0;
}

bool jail_cg_owner(const char *name, pid_t *pid)
{
	if (name[0] < '1' || name[0] > '9')
		return false;
	char *end;
	errno = 0;
	long v = strtol(name, &end, 10);
	if (errno != 0 || *end != '-' || v <= 0 || v > INT_MAX)
		return false;
	*pid = (pid_t)v;
	return true;
}

static bool pid_alive(pid_t pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}

/* Kills and removes the leaves named `name` under each parent where one
 * exists; true when none is left. */
static bool remove_named(const struct jail_cg_host *h, const char *name)
{
	struct jail_cg cg = { .v = h->v };
	bool ok = true;
	struct stat st;
	for (int i = 0; i < h->n && ok; i++) {
		cleanup_free char *leaf = join(h->parent[i], name);
		ok = leaf != NULL;
		if (!ok || stat(leaf, &st) < 0)
			continue;
		cg.procs[cg.n] = join(leaf, "cgroup.procs");
		ok = cg.procs[cg.n] != NULL;
		cg.leaf[cg.n++] = sbx_steal_ptr(leaf);
	}
	if (ok && h->v == JAIL_CG_V2 && cg.n > 0)
		ok = (cg.kill = join(cg.leaf[0], "cgroup.kill")) != NULL;
	if (ok)
		jail_cg_kill(&cg);
	for (int i = 0; i < cg.n && ok; i++)
		ok = stat(cg.leaf[i], &st) < 0;
	if (!ok)
		sbx_warn("leftovers: cannot remove cgroup %s", cg.n > 0 ? cg.leaf[0] : name);
	jail_cg_free(&cg);
	return ok;
}

unsigned jail_cg_remove_leftovers(const struct jail_cg_host *h)
{
	unsigned removed = 0;
	/* Each controller's parent is listed, not only the first: on v1 the
	 * parents sit under the daemon's own cgroup of each controller, and a
	 * daemon started in another memory cgroup (a new service instance, a
	 * new session) has other memory leaves but the same cpu and pids ones,
	 * which listing the memory parent alone never finds.  A name removed
	 * under the first parent is gone from the others too. */
	for (int i = 0; i < h->n; i++) {
		cleanup_dir DIR *d = opendir(h->parent[i]);
		struct dirent *de;
		while (d != NULL && (de = readdir(d)) != NULL) {
			pid_t owner;
			if (!jail_cg_owner(de->d_name, &owner) || pid_alive(owner))
				continue;
			if (remove_named(h, de->d_name)) {
				sbx_info("leftovers: removed cgroup %s/%s (its daemon, pid %d, is gone)", h->parent[i],
					 de->d_name, (int)owner);
				removed++;
			}
		}
	}
	return removed;
}
