/* See layer_scratch.h. */
#include "layer_scratch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/layer_apply.h"

#define KEEP_DATA "keep\n"

const struct sbx_image_limits scratch_limits = {
	.max_entries = 10000,
	.max_bytes = 64ull << 20,
	.max_blob_bytes = 64ull << 20,
};

static char base[256]; /* the parent: holds root/ and sentinel/ only */
static char root[300];
static struct stat base_st, sentinel_st, keep_st;

void scratch_die(const char *what)
{
	fprintf(stderr, "fuzz_layer: %s: %s\n", what, strerror(errno));
	abort();
}

/* Removes everything below dirfd (which stays open); depth is bounded by
 * the open-file limit raised at start. */
static void empty_dir(int dfd)
{
	DIR *d = fdopendir(dup(dfd));
	if (d == NULL)
		scratch_die("opendir");
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (unlinkat(dfd, de->d_name, 0) == 0)
			continue;
		int sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			scratch_die("open for removal");
		empty_dir(sub);
		close(sub);
		if (unlinkat(dfd, de->d_name, AT_REMOVEDIR) < 0)
			scratch_die("rmdir");
	}
	closedir(d);
}

void scratch_reset(void)
{
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		scratch_die("open root");
	if (fchmod(fd, 0755) < 0)
		scratch_die("chmod root");
	empty_dir(fd);
	close(fd);
	if (stat(base, &base_st) < 0)
		scratch_die("stat base");
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_mode == b->st_mode && a->st_nlink == b->st_nlink &&
	       a->st_size == b->st_size && a->st_uid == b->st_uid && a->st_gid == b->st_gid &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Every name in dir must be one of `want` (NULL-terminated), all present. */
static void expect_names(const char *dir, const char *const *want)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		scratch_die("opendir parent");
	size_t seen = 0, n = 0;
	while (want[n] != NULL)
		n++;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		bool known = false;
		for (size_t i = 0; i < n; i++)
			known = known || strcmp(de->d_name, want[i]) == 0;
		if (!known) {
			fprintf(stderr, "fuzz_layer: '%s' appeared in %s, outside the root\n", de->d_name, dir);
			abort();
		}
		seen++;
	}
	closedir(d);
	if (seen != n) {
		fprintf(stderr, "fuzz_layer: an entry of %s vanished\n", dir);
		abort();
	}
}

/* Nothing outside the root changed: the parent and the sentinel directory
 * hold exactly what they did, untouched (a hard link to keep would raise
 * its link count, a write its size or mtime). */
static void check_outside(void)
{
	static const char *const base_names[] = { "root", "sentinel", NULL };
	static const char *const sentinel_names[] = { "keep", NULL };
	char p[400];
	struct stat st;
	expect_names(base, base_names);
	snprintf(p, sizeof(p), "%s/sentinel", base);
	expect_names(p, sentinel_names);
	if (lstat(root, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "fuzz_layer: the root is no longer a directory\n");
		abort();
	}
	if (stat(base, &st) < 0 || !same_file(&st, &base_st))
		scratch_die("the parent directory changed");
	if (lstat(p, &st) < 0 || !same_file(&st, &sentinel_st))
		scratch_die("the sentinel directory changed");
	snprintf(p, sizeof(p), "%s/sentinel/keep", base);
	char buf[16];
	int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || !same_file(&st, &keep_st) || read(fd, buf, sizeof(buf)) != 5 ||
	    memcmp(buf, KEEP_DATA, 5) != 0)
		scratch_die("the sentinel file changed");
	close(fd);
}

/* Sums the sizes of the regular files below dfd, each inode once (hard
 * links share one), never following a symlink. */
static void sum_sizes(int dfd, uint64_t *total, ino_t *seen, size_t *n_seen, size_t cap_seen)
{
	DIR *d = fdopendir(dup(dfd));
	if (d == NULL)
		scratch_die("opendir for sizes");
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		struct stat st;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			scratch_die("stat");
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0)
				scratch_die("open for sizes");
			sum_sizes(sub, total, seen, n_seen, cap_seen);
			close(sub);
			continue;
		}
		if (!S_ISREG(st.st_mode))
			continue;
		bool dup_ino = false;
		for (size_t i = 0; st.st_nlink > 1 && i < *n_seen; i++)
			dup_ino = dup_ino || seen[i] == st.st_ino;
		if (dup_ino)
			continue;
		if (st.st_nlink > 1 && *n_seen < cap_seen)
			seen[(*n_seen)++] = st.st_ino;
		*total += (uint64_t)st.st_size;
	}
	closedir(d);
}

static void check_sizes(void)
{
	static ino_t seen[4096];
	size_t n_seen = 0;
	uint64_t total = 0;
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		scratch_die("open root");
	sum_sizes(fd, &total, seen, &n_seen, sizeof(seen) / sizeof(seen[0]));
	close(fd);
	if (total > scratch_limits.max_bytes) {
		fprintf(stderr, "fuzz_layer: %llu bytes of files, over the cap\n", (unsigned long long)total);
		abort();
	}
}

void scratch_check(void)
{
	check_outside();
	check_sizes();
}

static void remove_base(void)
{
	scratch_reset();
	char p[400];
	snprintf(p, sizeof(p), "%s/sentinel/keep", base);
	unlink(p);
	snprintf(p, sizeof(p), "%s/sentinel", base);
	rmdir(p);
	rmdir(root);
	rmdir(base);
}

/* A run that found something exits without atexit: its directory, named
 * for its pid, goes when a later run sees that pid gone. */
static void remove_stale(const char *tmp)
{
	DIR *d = opendir(tmp);
	if (d == NULL)
		return;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		int pid;
		if (sscanf(de->d_name, "sbx-fuzz-layer.%d.", &pid) != 1 || pid <= 0 || kill(pid, 0) == 0 ||
		    errno != ESRCH)
			continue;
		int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		empty_dir(fd);
		close(fd);
		unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

const char *scratch_create(void)
{
	/* Deep trees are walked with one descriptor per level. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
	tmp = tmp != NULL ? tmp : "/tmp";
	remove_stale(tmp);
	snprintf(base, sizeof(base), "%s/sbx-fuzz-layer.%d.XXXXXX", tmp, (int)getpid());
	if (mkdtemp(base) == NULL)
		scratch_die("mkdtemp");
	char p[400];
	snprintf(root, sizeof(root), "%s/root", base);
	snprintf(p, sizeof(p), "%s/sentinel", base);
	if (mkdir(root, 0755) < 0 || mkdir(p, 0755) < 0)
		scratch_die("mkdir");
	snprintf(p, sizeof(p), "%s/sentinel/keep", base);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, KEEP_DATA, 5) != 5 || fstat(fd, &keep_st) < 0)
		scratch_die("sentinel");
	close(fd);
	snprintf(p, sizeof(p), "%s/sentinel", base);
	if (lstat(p, &sentinel_st) < 0)
		scratch_die("stat sentinel");
	atexit(remove_base);
	return root;
}
