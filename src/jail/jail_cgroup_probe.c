/* Which cgroup hierarchy the jails use, and where their leaves go. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "jail/jail_cgroup.h"

#define PROC_TEXT_MAX (256 * 1024)
#define CONTROLLERS "memory pids cpu"

static const char *const v1_controllers[JAIL_CG_MAX_DIRS] = { "memory", "pids", "cpu" };

/* True when `list` (separated by any of `seps`) holds `word`. */
static bool has_word(const char *list, size_t len, const char *word, const char *seps)
{
	size_t wl = strlen(word);
	for (size_t i = 0; i < len;) {
		size_t j = i;
		while (j < len && strchr(seps, list[j]) == NULL)
			j++;
		if (j - i == wl && memcmp(list + i, word, wl) == 0)
			return true;
		i = j + 1;
	}
	return false;
}

char *jail_cg_mount_point(const char *mountinfo, const char *fstype, const char *controller, char **root)
{
	for (const char *line = mountinfo; line != NULL && *line != '\0';) {
		const char *eol = strchr(line, '\n');
		size_t len = eol != NULL ? (size_t)(eol - line) : strlen(line);
		const char *start = line;
		line = eol != NULL ? eol + 1 : NULL;
		/* id parent dev root MOUNTPOINT opts [optional...] - FSTYPE source SUPEROPTS */
		char copy[4096];
		if (len >= sizeof(copy))
			continue;
		memcpy(copy, start, len);
		copy[len] = '\0';
		char *dash = strstr(copy, " - ");
		if (dash == NULL)
			continue;
		*dash = '\0';
		char *save = NULL, *mnt = NULL, *mroot = NULL, *tok = strtok_r(copy, " ", &save);
		for (int i = 0; tok != NULL && i < 4; i++) {
			mroot = mnt;
			mnt = tok = strtok_r(NULL, " ", &save);
		}
		char *type = strtok_r(dash + 3, " ", &save);
		char *src = type != NULL ? strtok_r(NULL, " ", &save) : NULL;
		char *opts = src != NULL ? strtok_r(NULL, " ", &save) : NULL;
		if (mnt == NULL || type == NULL || strcmp(type, fstype) != 0)
			continue;
		if (controller == NULL || (opts != NULL && has_word(opts, strlen(opts), controller, ","))) {
			char *m = strdup(mnt);
			if (m != NULL && (*root = strdup(mroot != NULL ? mroot : "/")) == NULL) {
				free(m);
				m = NULL;
			}
			return m;
		}
	}
	return NULL;
}

char *jail_cg_own_path(const char *proc_cgroup, const char *controller)
{
	for (const char *line = proc_cgroup; line != NULL && *line != '\0';) {
		const char *eol = strchr(line, '\n');
		size_t len = eol != NULL ? (size_t)(eol - line) : strlen(line);
		const char *c1 = memchr(line, ':', len);
		const char *c2 = c1 != NULL ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
		if (c2 != NULL && c2[1] == '/') {
			size_t clen = (size_t)(c2 - c1 - 1);
			bool match = controller == NULL ? (clen == 0 && c1 - line == 1 && line[0] == '0')
							: has_word(c1 + 1, clen, controller, ",");
			if (match)
				return strndup(c2 + 1, len - (size_t)(c2 + 1 - line));
		}
		line = eol != NULL ? eol + 1 : NULL;
	}
	return NULL;
}

char *jail_cg_own_dir(const char *mnt, const char *root, const char *own)
{
	const char *rest = NULL;
	size_t rl = strlen(root);
	if (strcmp(root, "/") == 0)
		rest = own;
	else if (strncmp(own, root, rl) == 0 && (own[rl] == '/' || own[rl] == '\0'))
		rest = own + rl;
	else if (strcmp(own, "/") == 0)
		rest = own; /* a cgroup namespace: its root is the mount's */
	if (rest == NULL)
		return NULL;
	char *dir = NULL;
	return asprintf(&dir, "%s%s", mnt, strcmp(rest, "/") == 0 ? "" : rest) < 0 ? NULL : dir;
}

static char *read_text(const char *path)
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *buf = fd >= 0 ? malloc(PROC_TEXT_MAX) : NULL;
	if (buf == NULL)
		return NULL;
	size_t got = 0;
	ssize_t n;
	while (got < PROC_TEXT_MAX - 1 && (n = read(fd, buf + got, PROC_TEXT_MAX - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	return buf;
}

static int write_text(const char *path, const char *value)
{
	cleanup_close int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t w = write(fd, value, strlen(value));
	if (w == (ssize_t)strlen(value))
		return 0;
	if (w >= 0)
		errno = EIO;
	return -1;
}

/* <dir>/sandbox-libkrun, created. */
static char *make_parent(const char *dir, char *why, size_t len)
{
	char *p = NULL;
	if (asprintf(&p, "%s/%s", dir, JAIL_CG_SUBDIR) < 0) {
		snprintf(why, len, "out of memory");
		return NULL;
	}
	if (mkdir(p, 0755) < 0 && errno != EEXIST) {
		snprintf(why, len, "cannot create %s: %s", p, strerror(errno));
		free(p);
		return NULL;
	}
	return p;
}

static int probe_v1(struct jail_cg_host *h, const char *mi, const char *pc, char *why, size_t len)
{
	for (int i = 0; i < JAIL_CG_MAX_DIRS; i++) {
		cleanup_free char *root = NULL;
		cleanup_free char *mnt = jail_cg_mount_point(mi, "cgroup", v1_controllers[i], &root);
		cleanup_free char *own = jail_cg_own_path(pc, v1_controllers[i]);
		cleanup_free char *dir = mnt != NULL && own != NULL ? jail_cg_own_dir(mnt, root, own) : NULL;
		if (dir == NULL) {
			snprintf(why, len, "no cgroup v1 hierarchy with the %s controller holding the daemon is mounted",
				 v1_controllers[i]);
			return -1;
		}
		if ((h->parent[i] = make_parent(dir, why, len)) == NULL)
			return -1;
		h->n = i + 1;
	}
	h->v = JAIL_CG_V1;
	return 0;
}

/* The daemon's own cgroup may hold processes (its own): a cgroup with
 * processes cannot enable controllers for its children, so the daemon
 * first moves into a leaf of its own, as systemd asks of a service with
 * Delegate=yes. */
static int enable_controllers(const char *dir, char *why, size_t len)
{
	cleanup_free char *ctl = NULL, *leaf = NULL, *procs = NULL;
	if (asprintf(&ctl, "%s/cgroup.subtree_control", dir) < 0 || asprintf(&leaf, "%s/daemon", dir) < 0 ||
	    asprintf(&procs, "%s/daemon/cgroup.procs", dir) < 0) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	if (write_text(ctl, "+memory +pids +cpu") == 0)
		return 0;
	if (errno == EBUSY && (mkdir(leaf, 0755) == 0 || errno == EEXIST) && write_text(procs, "0") == 0 &&
	    write_text(ctl, "+memory +pids +cpu") == 0) {
		sbx_info("jail: moved the daemon into %s so that its cgroup can delegate to the VMs'", leaf);
		return 0;
	}
	snprintf(why, len, "cannot enable " CONTROLLERS " in %s: %s", ctl, strerror(errno));
	return -1;
}

static int probe_v2(struct jail_cg_host *h, const char *mi, const char *pc, char *why, size_t len)
{
	cleanup_free char *root = NULL;
	cleanup_free char *mnt = jail_cg_mount_point(mi, "cgroup2", NULL, &root);
	cleanup_free char *own = jail_cg_own_path(pc, NULL);
	cleanup_free char *dir = mnt != NULL && own != NULL ? jail_cg_own_dir(mnt, root, own) : NULL;
	if (dir == NULL) {
		snprintf(why, len, "no cgroup v2 hierarchy holding the daemon is mounted");
		return -1;
	}
	cleanup_free char *list = NULL;
	if (asprintf(&list, "%s/cgroup.controllers", dir) < 0) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	cleanup_free char *have = read_text(list);
	if (have == NULL) {
		snprintf(why, len, "cannot read %s", list);
		return -1;
	}
	have[strcspn(have, "\n")] = '\0';
	if (!has_word(have, strlen(have), "memory", " ") || !has_word(have, strlen(have), "pids", " ") ||
	    !has_word(have, strlen(have), "cpu", " ")) {
		snprintf(why, len, "cgroup v2 at %s offers the daemon's cgroup %s only \"%s\", not " CONTROLLERS, mnt,
			 own, have);
		return -1;
	}
	if (enable_controllers(dir, why, len) < 0 || (h->parent[0] = make_parent(dir, why, len)) == NULL)
		return -1;
	h->n = 1;
	cleanup_free char *sub = NULL;
	if (asprintf(&sub, "%s/cgroup.subtree_control", h->parent[0]) < 0 ||
	    write_text(sub, "+memory +pids +cpu") < 0) {
		snprintf(why, len, "cannot enable " CONTROLLERS " in %s: %s", h->parent[0], strerror(errno));
		return -1;
	}
	h->v = JAIL_CG_V2;
	return 0;
}

int jail_cg_probe(struct jail_cg_host *h, char *why, size_t len)
{
	*h = (struct jail_cg_host){ .v = JAIL_CG_NONE };
	cleanup_free char *mi = read_text("/proc/self/mountinfo");
	cleanup_free char *pc = read_text("/proc/self/cgroup");
	if (mi == NULL || pc == NULL) {
		snprintf(why, len, "cannot read /proc/self/mountinfo or /proc/self/cgroup");
		return -1;
	}
	char why2[512], why1[512];
	if (probe_v2(h, mi, pc, why2, sizeof(why2)) == 0)
		return 0;
	jail_cg_host_free(h);
	if (probe_v1(h, mi, pc, why1, sizeof(why1)) == 0)
		return 0;
	jail_cg_host_free(h);
	snprintf(why, len, "no usable cgroup hierarchy (v2: %s; v1: %s)", why2, why1);
	return -1;
}

void jail_cg_host_free(struct jail_cg_host *h)
{
	for (int i = 0; i < JAIL_CG_MAX_DIRS; i++) {
		free(h->parent[i]);
		h->parent[i] = NULL;
	}
	h->n = 0;
	h->v = JAIL_CG_NONE;
}
