/* A whole image layer from a hostile registry: the bytes go through
 * libarchive (tar, gzip, zstd) and the real layer-apply code into a fresh
 * root.  An input holding LAYER_SEP is two layers applied in turn.  After
 * each step nothing outside the root may have changed (no entry, link or
 * symlink reached out), and the files inside stay within the size cap.  A
 * last layer of whiteouts, then an opaque marker, must empty the root.
 * The mutator keeps plain tar headers' checksums right, so mutations reach
 * the layer code instead of libarchive's checksum test. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "image/layer_apply.h"

#define LAYER_SEP "SBXLAYER"
#define KEEP_DATA "keep\n"

static char base[256];   /* the parent: holds root/ and sentinel/ only */
static char root[300];
static struct stat base_st, sentinel_st, keep_st;

static void die(const char *what)
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
		die("opendir");
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (unlinkat(dfd, de->d_name, 0) == 0)
			continue;
		int sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			die("open for removal");
		empty_dir(sub);
		close(sub);
		if (unlinkat(dfd, de->d_name, AT_REMOVEDIR) < 0)
			die("rmdir");
	}
	closedir(d);
}

static void reset_root(void)
{
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		die("open root");
	if (fchmod(fd, 0755) < 0)
		die("chmod root");
	empty_dir(fd);
	close(fd);
	if (stat(base, &base_st) < 0)
		die("stat base");
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
		die("opendir parent");
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
		die("the parent directory changed");
	if (lstat(p, &st) < 0 || !same_file(&st, &sentinel_st))
		die("the sentinel directory changed");
	snprintf(p, sizeof(p), "%s/sentinel/keep", base);
	char buf[16];
	int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || !same_file(&st, &keep_st) || read(fd, buf, sizeof(buf)) != 5 ||
	    memcmp(buf, KEEP_DATA, 5) != 0)
		die("the sentinel file changed");
	close(fd);
}

/* Sums the sizes of the regular files below dfd, each inode once (hard
 * links share one), never following a symlink. */
static void sum_sizes(int dfd, uint64_t *total, ino_t *seen, size_t *n_seen, size_t cap_seen)
{
	DIR *d = fdopendir(dup(dfd));
	if (d == NULL)
		die("opendir for sizes");
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		struct stat st;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			die("stat");
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0)
				die("open for sizes");
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
		die("open root");
	sum_sizes(fd, &total, seen, &n_seen, sizeof(seen) / sizeof(seen[0]));
	close(fd);
	if (total > SBX_ROOTFS_MAX_BYTES) {
		fprintf(stderr, "fuzz_layer: %llu bytes of files, over the cap\n", (unsigned long long)total);
		abort();
	}
}

static void check(void)
{
	check_outside();
	check_sizes();
}

static int memfd_with(const void *data, size_t len)
{
	int fd = memfd_create("layer", MFD_CLOEXEC);
	if (fd < 0)
		die("memfd_create");
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, (const char *)data + off, len - off);
		if (n <= 0)
			die("write memfd");
		off += (size_t)n;
	}
	if (lseek(fd, 0, SEEK_SET) < 0)
		die("lseek");
	return fd;
}

static int apply(struct sbx_rootfs *r, int fd, sbx_error_t *err)
{
	int rc = sbx_rootfs_apply_layer(r, fd, err);
	close(fd);
	check();
	return rc;
}

/* A tar of empty files with these names, as Docker writes whiteouts. */
static int whiteout_layer(char names[][256], size_t n)
{
	int fd = memfd_create("whiteouts", MFD_CLOEXEC);
	struct archive *a = archive_write_new();
	/* Names are bytes (the fuzzed layer's need not be UTF-8). */
	if (fd < 0 || a == NULL || archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    archive_write_set_options(a, "hdrcharset=BINARY") != ARCHIVE_OK || archive_write_open_fd(a, fd) != ARCHIVE_OK)
		die("whiteout layer");
	struct archive_entry *e = archive_entry_new();
	for (size_t i = 0; i < n; i++) {
		archive_entry_clear(e);
		archive_entry_set_pathname(e, names[i]);
		archive_entry_set_filetype(e, AE_IFREG);
		archive_entry_set_perm(e, 0644);
		archive_entry_set_size(e, 0);
		if (archive_write_header(a, e) != ARCHIVE_OK)
			die("whiteout entry");
	}
	archive_entry_free(e);
	if (archive_write_close(a) != ARCHIVE_OK)
		die("whiteout layer close");
	archive_write_free(a);
	if (lseek(fd, 0, SEEK_SET) < 0)
		die("lseek");
	return fd;
}

/* The root's entries; names[] gets a whiteout for at most cap of them.  A
 * name that fits none stays: too long, or itself whiteout-shaped (".wh.x"
 * comes from an entry's parent; ".wh..wh.x" is AUFS metadata, not a
 * whiteout, in every runtime). */
static size_t list_root(char names[][256], size_t cap, size_t *total)
{
	DIR *d = opendir(root);
	if (d == NULL)
		die("opendir root");
	size_t n = 0;
	*total = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		(*total)++;
		if (n < cap && strlen(de->d_name) <= 255 - 4 && strncmp(de->d_name, ".wh.", 4) != 0)
			snprintf(names[n++], 256, ".wh.%s", de->d_name);
	}
	closedir(d);
	return n;
}

/* A later layer removes what this one wrote.  Removal may refuse a tree
 * deeper than the layer code walks (symlinked parents can build one); that
 * is its only excuse for leaving anything behind. */
static void whiteout_everything(struct sbx_rootfs *r)
{
	static char names[512][256];
	size_t total;
	size_t n = list_root(names, 512, &total);
	sbx_error_t err = NULL;
	if (apply(r, whiteout_layer(names, n), &err) < 0) {
		if (strstr(sbx_error_msg(err), "too deep") == NULL) {
			fprintf(stderr, "fuzz_layer: whiteouts failed: %s\n", sbx_error_msg(err));
			abort();
		}
		sbx_error_free(&err);
		return;
	}
	size_t left;
	list_root(names, 512, &left);
	if (left != total - n) {
		fprintf(stderr, "fuzz_layer: %zu of %zu whited-out entries survived\n", left - (total - n), n);
		abort();
	}
	snprintf(names[0], 256, ".wh..wh..opq");
	if (apply(r, whiteout_layer(names, 1), &err) < 0) {
		if (strstr(sbx_error_msg(err), "too deep") == NULL) {
			fprintf(stderr, "fuzz_layer: opaque marker failed: %s\n", sbx_error_msg(err));
			abort();
		}
		sbx_error_free(&err);
		return;
	}
	list_root(names, 512, &left);
	if (left != 0) {
		fprintf(stderr, "fuzz_layer: %zu entries survived an opaque root\n", left);
		abort();
	}
}

static void remove_base(void)
{
	reset_root();
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

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

/* Rewrites the checksum of every ustar header at a 512-byte boundary of
 * one layer (compressed layers have none). */
static void fix_checksums(uint8_t *p, size_t len)
{
	for (size_t off = 0; off + 512 <= len; off += 512) {
		uint8_t *h = p + off;
		if (memcmp(h + 257, "ustar", 5) != 0)
			continue;
		memset(h + 148, ' ', 8);
		unsigned sum = 0;
		for (size_t i = 0; i < 512; i++)
			sum += h[i];
		char field[8];
		snprintf(field, sizeof(field), "%06o", sum & 0777777);
		memcpy(h + 148, field, 7); /* six digits, NUL, and the space stays */
	}
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	(void)seed;
	size = LLVMFuzzerMutate(data, size, max_size);
	uint8_t *sep = memmem(data, size, LAYER_SEP, strlen(LAYER_SEP));
	size_t first = sep != NULL ? (size_t)(sep - data) : size;
	fix_checksums(data, first);
	if (sep != NULL)
		fix_checksums(sep + strlen(LAYER_SEP), size - first - strlen(LAYER_SEP));
	return size;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	sbx_log_set_level(SBX_LOG_ERROR);
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
		die("mkdtemp");
	char p[400];
	snprintf(root, sizeof(root), "%s/root", base);
	snprintf(p, sizeof(p), "%s/sentinel", base);
	if (mkdir(root, 0755) < 0 || mkdir(p, 0755) < 0)
		die("mkdir");
	snprintf(p, sizeof(p), "%s/sentinel/keep", base);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, KEEP_DATA, 5) != 5 || fstat(fd, &keep_st) < 0)
		die("sentinel");
	close(fd);
	snprintf(p, sizeof(p), "%s/sentinel", base);
	if (lstat(p, &sentinel_st) < 0)
		die("stat sentinel");
	atexit(remove_base);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	reset_root();
	sbx_error_t err = NULL;
	struct sbx_rootfs *r = sbx_rootfs_open(root, &err);
	if (r == NULL)
		die("sbx_rootfs_open");
	const uint8_t *sep = memmem(data, size, LAYER_SEP, strlen(LAYER_SEP));
	size_t first = sep != NULL ? (size_t)(sep - data) : size;
	int rc = apply(r, memfd_with(data, first), &err);
	sbx_error_free(&err);
	if (rc == 0 && sep != NULL) {
		size_t off = first + strlen(LAYER_SEP);
		rc = apply(r, memfd_with(data + off, size - off), &err);
		sbx_error_free(&err);
	}
	if (sbx_rootfs_finish(r, &err) < 0)
		sbx_error_free(&err);
	check();
	whiteout_everything(r);
	sbx_rootfs_free(r);
	return 0;
}
