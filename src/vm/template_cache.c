#include "vm/template_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/path.h"
#include "common/state_dir.h"
#include "vm/snapshot.h"

#define MAX_TEMPLATES 4096
#define SHM_ROOT "/dev/shm"
#define SHM_PREFIX "sandbox-libkrun-"

struct tpl {
	char *dir;
	uint64_t bytes;
	struct timespec used;
};

void template_cache_touch(const char *dir)
{
	utimensat(AT_FDCWD, dir, NULL, 0);
}

static bool is_key(const char *name)
{
	if (strlen(name) != SNAPSHOT_KEY_LEN)
		return false;
	for (const char *p = name; *p != '\0'; p++) {
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	}
	return true;
}

/* A small text file of a template (NULL when missing or too long). */
static char *read_small(const char *dir, const char *name, size_t cap)
{
	cleanup_free char *p = sbx_path_join(dir, name);
	if (p == NULL)
		return NULL;
	cleanup_close int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return NULL;
	char *buf = malloc(cap);
	ssize_t n = buf != NULL ? read(fd, buf, cap - 1) : -1;
	if (n < 0 || (size_t)n == cap - 1) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

static uint64_t allocated(const char *path)
{
	struct stat st;
	return path != NULL && stat(path, &st) == 0 ? (uint64_t)st.st_blocks * 512u : 0;
}

/* The complete templates; *n of them. */
static struct tpl *list(size_t *n)
{
	*n = 0;
	sbx_error_t err = NULL;
	cleanup_free char *root = snapshot_dir(&err);
	sbx_error_free(&err);
	DIR *d = root != NULL ? opendir(root) : NULL;
	if (d == NULL)
		return NULL;
	struct tpl *v = calloc(MAX_TEMPLATES, sizeof(*v));
	struct dirent *e;
	while (v != NULL && *n < MAX_TEMPLATES && (e = readdir(d)) != NULL) {
		struct stat st;
		if (!is_key(e->d_name) || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode))
			continue;
		struct tpl *t = &v[*n];
		if ((t->dir = sbx_path_join(root, e->d_name)) == NULL)
			break;
		cleanup_free char *state = sbx_path_join(t->dir, "state"), *ram = sbx_path_join(t->dir, "ram");
		t->bytes = allocated(ram) + allocated(state);
		t->used = st.st_mtim;
		(*n)++;
	}
	closedir(d);
	return v;
}

static void list_free(struct tpl *v, size_t n)
{
	for (size_t i = 0; v != NULL && i < n; i++) {
		free(v[i].dir);
	}
	free(v);
}

static int by_use(const void *a, const void *b)
{
	const struct tpl *x = a, *y = b;
	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	return x->used.tv_nsec < y->used.tv_nsec ? -1 : x->used.tv_nsec > y->used.tv_nsec;
}

unsigned template_cache_trim(uint64_t limit_mib)
{
	if (limit_mib == 0)
		return 0;
	size_t n;
	struct tpl *v = list(&n);
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += v[i].bytes;
	if (n > 0)
		qsort(v, n, sizeof(*v), by_use);
	unsigned gone = 0;
	for (size_t i = 0; i < n && total > limit_mib << 20; i++) {
		sbx_info("vm: template %.12s dropped (template_cache_mb %llu: least recently used)",
			 strrchr(v[i].dir, '/') + 1, (unsigned long long)limit_mib);
		snapshot_remove_dir(v[i].dir);
		total -= v[i].bytes;
		gone++;
	}
	list_free(v, n);
	return gone;
}

/* The /dev/shm RAM directories of format 3 templates (before sealed
 * memfds): this state directory's, and those of state directories that
 * are gone (their owner file names the state directory). */
static void sweep_legacy_ram_dirs(void)
{
	sbx_error_t err = NULL;
	cleanup_free char *given = sbx_state_dir(&err);
	sbx_error_free(&err);
	cleanup_free char *ours = given != NULL ? realpath(given, NULL) : NULL;
	DIR *d = opendir(SHM_ROOT);
	if (d == NULL)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		struct stat st;
		if (strncmp(e->d_name, SHM_PREFIX, strlen(SHM_PREFIX)) != 0 ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
		    st.st_uid != geteuid())
			continue;
		cleanup_free char *dir = sbx_path_join(SHM_ROOT, e->d_name);
		cleanup_free char *owner = dir != NULL ? read_small(dir, "owner", 4200) : NULL;
		if (dir == NULL || owner == NULL)
			continue;
		owner[strcspn(owner, "\n")] = '\0';
		cleanup_free char *snaps = sbx_path_join(owner, "snapshots");
		struct stat sst;
		if (snaps == NULL || ((ours == NULL || strcmp(owner, ours) != 0) && stat(snaps, &sst) == 0))
			continue;
		DIR *r = opendir(dir);
		struct dirent *f;
		while (r != NULL && (f = readdir(r)) != NULL) {
			if (f->d_name[0] != '.')
				unlinkat(dirfd(r), f->d_name, 0);
		}
		if (r != NULL)
			closedir(r);
		rmdir(dir);
	}
	closedir(d);
}

unsigned template_cache_sweep(void)
{
	size_t n;
	struct tpl *v = list(&n);
	unsigned gone = 0;
	for (size_t i = 0; i < n; i++) {
		cleanup_free char *text = read_small(v[i].dir, "key", SNAPSHOT_KEY_TEXT_MAX);
		if (text != NULL && snapshot_key_usable(text))
			continue;
		sbx_info("vm: template %.12s removed: its image went, its format is older, or (under KVM) the CPU "
			 "changed",
			 strrchr(v[i].dir, '/') + 1);
		snapshot_remove_dir(v[i].dir);
		gone++;
	}
	list_free(v, n);
	sweep_legacy_ram_dirs();
	return gone;
}
