/* Layer application: metadata, whiteouts, opaque directories, and hostile
 * archives that try to write outside the staging root. */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "image/layer_apply.h"
#include "layer_builder.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const struct sbx_image_limits limits = {
	.max_entries = SBX_IMAGE_MAX_ENTRIES_DEFAULT,
	.max_bytes = SBX_IMAGE_MAX_MB_DEFAULT << 20,
	.max_blob_bytes = SBX_IMAGE_MAX_BLOB_MB_DEFAULT << 20,
};

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

static void rm_rf(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

struct fixture {
	char base[64];  /* holds root/ and outside/ */
	char root[96];
	char outside[96];
};

static void setup(struct fixture *f)
{
	snprintf(f->base, sizeof(f->base), "/tmp/sbx-apply-XXXXXX");
	if (mkdtemp(f->base) == NULL)
		abort();
	snprintf(f->root, sizeof(f->root), "%s/root", f->base);
	snprintf(f->outside, sizeof(f->outside), "%s/outside", f->base);
	mkdir(f->root, 0755);
	mkdir(f->outside, 0755);
}

/* Applies the layers in order; returns 0 or -1 with the error message in msg. */
static int apply(struct fixture *f, const struct tl_entry *const *layers, const size_t *counts, size_t n,
		 enum tl_compression c, char *msg, size_t msglen)
{
	sbx_error_t err = NULL;
	struct sbx_rootfs *r = sbx_rootfs_open(f->root, &limits, 0, &err);
	int rc = r ? 0 : -1;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		int fd = tl_build(layers[i], counts[i], c);
		if (fd < 0)
			abort();
		rc = sbx_rootfs_apply_layer(r, fd, &err);
		close(fd);
	}
	if (rc == 0)
		rc = sbx_rootfs_finish(r, &err);
	if (msg)
		snprintf(msg, msglen, "%s", sbx_error_msg(err));
	sbx_error_free(&err);
	sbx_rootfs_free(r);
	return rc;
}

static int apply1(struct fixture *f, const struct tl_entry *l, size_t n, char *msg)
{
	return apply(f, &l, &n, 1, TL_GZIP, msg, 256);
}

static int lstat_in(struct fixture *f, const char *rel, struct stat *st)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", f->root, rel);
	return lstat(p, st);
}

static int outside_is_empty(struct fixture *f)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/pwned", f->outside);
	struct stat st;
	return lstat(p, &st) < 0;
}

TEST(keeps_metadata)
{
	struct fixture f;
	setup(&f);
	const struct tl_entry l[] = {
		{ TL_DIR, "./usr/", NULL, 0750, 0, 0, 1111, NULL },
		{ TL_DIR, "usr/bin", NULL, 0755, 5, 6, 2222, NULL },
		{ TL_FILE, "usr/bin/su", "#!", 04755, 0, 0, 3333, "user.sbx=yes" },
		{ TL_FILE, "usr/bin/data", "hello", 0640, 1234, 4321, 4444, NULL },
		{ TL_SYMLINK, "usr/bin/sh", "/usr/bin/su", 0, 7, 8, 5555, NULL },
		{ TL_HARDLINK, "usr/bin/data2", "usr/bin/data", 0, 0, 0, 0, NULL },
		{ TL_FIFO, "usr/fifo", NULL, 0600, 0, 0, 0, NULL },
		{ TL_CHR, "usr/null", NULL, 0666, 0, 0, 0, NULL },
		{ TL_FILE, "/abs/inside", "x", 0, 0, 0, 0, NULL },
	};
	char msg[256];
	int rc = apply1(&f, l, N(l), msg);
	if (rc != 0)
		sbx_test_fail(__FILE__, __LINE__, "apply: %s", msg);
	struct stat st, st2;
	CHECK(rc == 0);
	CHECK(lstat_in(&f, "usr", &st) == 0);
	CHECK_INT(st.st_mode & 07777, 0750);
	CHECK_INT(st.st_mtime, 1111);
	CHECK(lstat_in(&f, "usr/bin", &st) == 0);
	CHECK_INT(st.st_uid, 5);
	CHECK_INT(st.st_gid, 6);
	CHECK_INT(st.st_mtime, 2222);
	CHECK(lstat_in(&f, "usr/bin/su", &st) == 0);
	CHECK_INT(st.st_mode & 07777, 04755);
	CHECK_INT(st.st_mtime, 3333);
	CHECK(lstat_in(&f, "usr/bin/data", &st) == 0);
	CHECK_INT(st.st_uid, 1234);
	CHECK_INT(st.st_gid, 4321);
	CHECK_INT(st.st_size, 5);
	CHECK_INT(st.st_mode & 07777, 0640);
	CHECK(lstat_in(&f, "usr/bin/data2", &st2) == 0);
	CHECK(st.st_ino == st2.st_ino);
	CHECK_INT(st2.st_nlink, 2);
	CHECK(lstat_in(&f, "usr/bin/sh", &st) == 0);
	CHECK(S_ISLNK(st.st_mode));
	CHECK_INT(st.st_uid, 7);
	CHECK_INT(st.st_mtime, 5555);
	char target[64] = "";
	char p[512];
	snprintf(p, sizeof(p), "%s/usr/bin/sh", f.root);
	CHECK(readlink(p, target, sizeof(target) - 1) > 0);
	CHECK_STR(target, "/usr/bin/su");
	snprintf(p, sizeof(p), "%s/usr/bin/su", f.root);
	char xv[16] = "";
	ssize_t xn = getxattr(p, "user.sbx", xv, sizeof(xv) - 1);
	if (xn < 0 && errno != ENOTSUP) /* tmpfs without user xattrs */
		CHECK(xn == 3);
	if (xn >= 0)
		CHECK_STR(xv, "yes");
	CHECK(lstat_in(&f, "usr/fifo", &st) == 0);
	CHECK(S_ISFIFO(st.st_mode));
	if (geteuid() == 0) {
		CHECK(lstat_in(&f, "usr/null", &st) == 0);
		CHECK(S_ISCHR(st.st_mode));
		CHECK(st.st_rdev == makedev(1, 3));
	}
	CHECK(lstat_in(&f, "abs/inside", &st) == 0);
	rm_rf(f.base);
}

TEST(whiteouts_and_opaque_directories)
{
	struct fixture f;
	setup(&f);
	const struct tl_entry l1[] = {
		{ TL_DIR, "a", NULL, 0, 0, 0, 0, NULL },
		{ TL_FILE, "a/gone", "1", 0, 0, 0, 0, NULL },
		{ TL_FILE, "a/kept", "2", 0, 0, 0, 0, NULL },
		{ TL_DIR, "d", NULL, 0, 0, 0, 0, NULL },
		{ TL_DIR, "d/sub", NULL, 0, 0, 0, 0, NULL },
		{ TL_FILE, "d/sub/old", "3", 0, 0, 0, 0, NULL },
		{ TL_FILE, "d/old", "4", 0, 0, 0, 0, NULL },
		{ TL_DIR, "e", NULL, 0, 0, 0, 0, NULL },
		{ TL_FILE, "e/old", "5", 0, 0, 0, 0, NULL },
		{ TL_DIR, "whole", NULL, 0, 0, 0, 0, NULL },
		{ TL_FILE, "whole/x", "6", 0, 0, 0, 0, NULL },
	};
	const struct tl_entry l2[] = {
		{ TL_FILE, "a/.wh.gone", "", 0, 0, 0, 0, NULL },
		{ TL_DIR, "d", NULL, 0, 0, 0, 0, NULL },
		{ TL_FILE, "d/.wh..wh..opq", "", 0, 0, 0, 0, NULL },
		{ TL_FILE, "d/new", "7", 0, 0, 0, 0, NULL },
		/* this layer's own entry, listed before the marker, survives it */
		{ TL_FILE, "e/mine", "8", 0, 0, 0, 0, NULL },
		{ TL_FILE, "e/.wh..wh..opq", "", 0, 0, 0, 0, NULL },
		{ TL_FILE, ".wh.whole", "", 0, 0, 0, 0, NULL },
		{ TL_FILE, "nothere/.wh.x", "", 0, 0, 0, 0, NULL },
	};
	const struct tl_entry *layers[] = { l1, l2 };
	size_t counts[] = { N(l1), N(l2) };
	char msg[256];
	int rc = apply(&f, layers, counts, 2, TL_ZSTD, msg, sizeof(msg));
	if (rc != 0)
		sbx_test_fail(__FILE__, __LINE__, "apply: %s", msg);
	CHECK(rc == 0);
	struct stat st;
	CHECK(lstat_in(&f, "a/gone", &st) < 0);
	CHECK(lstat_in(&f, "a/.wh.gone", &st) < 0);
	CHECK(lstat_in(&f, "a/kept", &st) == 0);
	CHECK(lstat_in(&f, "d/sub", &st) < 0);
	CHECK(lstat_in(&f, "d/old", &st) < 0);
	CHECK(lstat_in(&f, "d/new", &st) == 0);
	CHECK(lstat_in(&f, "d/.wh..wh..opq", &st) < 0);
	CHECK(lstat_in(&f, "e/old", &st) < 0);
	CHECK(lstat_in(&f, "e/mine", &st) == 0);
	CHECK(lstat_in(&f, "whole", &st) < 0);
	rm_rf(f.base);
}

TEST(replaces_types)
{
	struct fixture f;
	setup(&f);
	const struct tl_entry l1[] = {
		{ TL_DIR, "x", NULL, 0, 0, 0, 0, NULL },
		{ TL_FILE, "x/f", "1", 0, 0, 0, 0, NULL },
		{ TL_FILE, "y", "2", 0, 0, 0, 0, NULL },
	};
	const struct tl_entry l2[] = {
		{ TL_FILE, "x", "file now", 0, 0, 0, 0, NULL },
		{ TL_DIR, "y", NULL, 0700, 0, 0, 0, NULL },
	};
	const struct tl_entry *layers[] = { l1, l2 };
	size_t counts[] = { N(l1), N(l2) };
	CHECK(apply(&f, layers, counts, 2, TL_NONE, NULL, 0) == 0);
	struct stat st;
	CHECK(lstat_in(&f, "x", &st) == 0);
	CHECK(S_ISREG(st.st_mode));
	CHECK(lstat_in(&f, "y", &st) == 0);
	CHECK(S_ISDIR(st.st_mode));
	rm_rf(f.base);
}

TEST(refuses_dot_dot)
{
	struct fixture f;
	setup(&f);
	const struct tl_entry l[] = { { TL_FILE, "../outside/pwned", "x", 0, 0, 0, 0, NULL } };
	char msg[256];
	CHECK(apply1(&f, l, N(l), msg) < 0);
	CHECK(strstr(msg, "..") != NULL);
	CHECK(outside_is_empty(&f));
	rm_rf(f.base);
}

TEST(symlink_cannot_carry_writes_outside)
{
	struct fixture f;
	setup(&f);
	/* An absolute and a relative symlink to the real outside directory, then
	 * writes through both: they land inside the root. */
	char up[256];
	snprintf(up, sizeof(up), "../../../../../../../..%s", f.outside);
	const struct tl_entry dangling[] = {
		{ TL_SYMLINK, "abs", f.outside, 0, 0, 0, 0, NULL },
		{ TL_FILE, "abs/pwned", "x", 0, 0, 0, 0, NULL },
	};
	CHECK(apply1(&f, dangling, N(dangling), NULL) < 0);
	CHECK(outside_is_empty(&f));
	rm_rf(f.root);
	mkdir(f.root, 0755);
	const struct tl_entry l[] = {
		{ TL_DIR, f.outside, NULL, 0, 0, 0, 0, NULL }, /* the same path, inside the image */
		{ TL_SYMLINK, "abs", f.outside, 0, 0, 0, 0, NULL },
		{ TL_SYMLINK, "rel", up, 0, 0, 0, 0, NULL },
		{ TL_FILE, "abs/pwned", "x", 0, 0, 0, 0, NULL },
		{ TL_FILE, "rel/pwned", "y", 0, 0, 0, 0, NULL },
		{ TL_DIR, "abs/dir", NULL, 0, 0, 0, 0, NULL },
	};
	CHECK(apply1(&f, l, N(l), NULL) == 0);
	CHECK(outside_is_empty(&f));
	char inside[256];
	snprintf(inside, sizeof(inside), "%s/pwned", f.outside + 1);
	struct stat st;
	CHECK(lstat_in(&f, inside, &st) == 0);
	snprintf(inside, sizeof(inside), "%s/dir", f.outside + 1);
	CHECK(lstat_in(&f, inside, &st) == 0);
	rm_rf(f.base);
}

TEST(symlink_then_whiteout_cannot_delete_outside)
{
	struct fixture f;
	setup(&f);
	char victim[256];
	snprintf(victim, sizeof(victim), "%s/pwned", f.outside);
	int fd = open(victim, O_CREAT | O_WRONLY, 0644);
	CHECK(fd >= 0);
	close(fd);
	const struct tl_entry l1[] = { { TL_SYMLINK, "abs", f.outside, 0, 0, 0, 0, NULL } };
	const struct tl_entry l2[] = { { TL_FILE, "abs/.wh.pwned", "", 0, 0, 0, 0, NULL },
				       { TL_FILE, "abs/.wh..wh..opq", "", 0, 0, 0, 0, NULL } };
	const struct tl_entry *layers[] = { l1, l2 };
	size_t counts[] = { N(l1), N(l2) };
	apply(&f, layers, counts, 2, TL_GZIP, NULL, 0);
	struct stat st;
	CHECK(lstat(victim, &st) == 0);
	rm_rf(f.base);
}

TEST(hard_link_cannot_reach_outside)
{
	struct fixture f;
	setup(&f);
	char victim[256];
	snprintf(victim, sizeof(victim), "%s/secret", f.outside);
	int fd = open(victim, O_CREAT | O_WRONLY, 0600);
	CHECK(fd >= 0);
	close(fd);
	char target[256];
	snprintf(target, sizeof(target), "%s", victim);
	const struct tl_entry l[] = { { TL_SYMLINK, "out", f.outside, 0, 0, 0, 0, NULL },
				      { TL_HARDLINK, "link1", target, 0, 0, 0, 0, NULL } };
	const struct tl_entry l2[] = { { TL_HARDLINK, "link2", "out/secret", 0, 0, 0, 0, NULL } };
	const struct tl_entry l3[] = { { TL_HARDLINK, "link3", "../outside/secret", 0, 0, 0, 0, NULL } };
	CHECK(apply1(&f, l, N(l), NULL) < 0);
	CHECK(apply1(&f, l2, N(l2), NULL) < 0);
	CHECK(apply1(&f, l3, N(l3), NULL) < 0);
	struct stat st;
	CHECK(lstat(victim, &st) == 0);
	CHECK_INT(st.st_nlink, 1);
	rm_rf(f.base);
}

TEST(refuses_garbage)
{
	struct fixture f;
	setup(&f);
	sbx_error_t err = NULL;
	struct sbx_rootfs *r = sbx_rootfs_open(f.root, &limits, 0, &err);
	CHECK(r != NULL);
	char tmpl[] = "/tmp/sbx-garbage-XXXXXX";
	int fd = mkstemp(tmpl);
	unlink(tmpl);
	CHECK(write(fd, "\x1f\x8b\x08\x00garbage that is not a gzip stream", 37) == 37);
	lseek(fd, 0, SEEK_SET);
	CHECK(sbx_rootfs_apply_layer(r, fd, &err) < 0);
	CHECK(err != NULL);
	sbx_error_free(&err);
	close(fd);
	sbx_rootfs_free(r);
	rm_rf(f.base);
}

TEST(links_and_whiteouts_to_missing_paths_create_nothing)
{
	struct fixture f;
	setup(&f);
	const struct tl_entry l[] = { { TL_HARDLINK, "link", "missing/dir/file", 0, 0, 0, 0, NULL } };
	const struct tl_entry l2[] = { { TL_FILE, "gone/.wh.x", "", 0, 0, 0, 0, NULL } };
	char msg[256];
	CHECK(apply1(&f, l, N(l), msg) < 0);
	CHECK(strstr(msg, "hard link target") != NULL);
	CHECK(apply1(&f, l2, N(l2), NULL) == 0);
	struct stat st;
	CHECK(lstat_in(&f, "missing", &st) < 0 && errno == ENOENT);
	CHECK(lstat_in(&f, "gone", &st) < 0 && errno == ENOENT);
	rm_rf(f.base);
}

/* One ustar header for a regular file whose size field holds `size` in
 * GNU base-256 form, followed by no data at all. */
static int huge_entry_layer(uint64_t size)
{
	unsigned char h[512] = { 0 };
	memcpy(h, "sparse-bomb", 11);
	memcpy(h + 100, "0000644", 7);
	memcpy(h + 108, "0000000", 7);
	memcpy(h + 116, "0000000", 7);
	h[124] = 0x80; /* base-256 */
	for (int i = 0; i < 8; i++)
		h[135 - i] = (unsigned char)(size >> (8 * i));
	memcpy(h + 136, "00000000000", 11);
	h[156] = '0';
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (size_t i = 0; i < sizeof(h); i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	h[155] = ' ';
	char tmpl[] = "/tmp/sbx-bomb-XXXXXX";
	int fd = mkstemp(tmpl);
	if (fd < 0)
		abort();
	unlink(tmpl);
	if (write(fd, h, sizeof(h)) != (ssize_t)sizeof(h) || lseek(fd, 0, SEEK_SET) < 0)
		abort();
	return fd;
}

TEST(declared_size_counts_toward_the_cap)
{
	struct fixture f;
	setup(&f);
	sbx_error_t err = NULL;
	struct sbx_rootfs *r = sbx_rootfs_open(f.root, &limits, 0, &err);
	CHECK(r != NULL);
	int fd = huge_entry_layer(limits.max_bytes);
	CHECK(sbx_rootfs_apply_layer(r, fd, &err) < 0);
	CHECK(err != NULL && strstr(sbx_error_msg(err), "config key `image_max_mb`") != NULL);
	sbx_error_free(&err);
	close(fd);
	struct stat st;
	CHECK(lstat_in(&f, "sparse-bomb", &st) < 0);
	sbx_rootfs_free(r);
	rm_rf(f.base);
}

/* Applies one layer into a fresh rootfs with these limits and flags. */
static int apply_limited(struct fixture *f, const struct sbx_image_limits *lim, unsigned flags,
			 const struct tl_entry *l, size_t n, char *msg, size_t msglen)
{
	sbx_error_t err = NULL;
	struct sbx_rootfs *r = sbx_rootfs_open(f->root, lim, flags, &err);
	if (r == NULL)
		abort();
	int fd = tl_build(l, n, TL_NONE);
	if (fd < 0)
		abort();
	int rc = sbx_rootfs_apply_layer(r, fd, &err);
	close(fd);
	snprintf(msg, msglen, "%s", sbx_error_msg(err));
	sbx_error_free(&err);
	sbx_rootfs_free(r);
	return rc;
}

TEST(every_entry_counts_toward_the_entries_cap)
{
	struct fixture f;
	setup(&f);
	struct sbx_image_limits lim = limits;
	lim.max_entries = 3;
	const struct tl_entry l[] = { { TL_DIR, "a", NULL, 0, 0, 0, 0, NULL },
				      { TL_SYMLINK, "b", "a", 0, 0, 0, 0, NULL },
				      { TL_FILE, "a/.wh.x", "", 0, 0, 0, 0, NULL },
				      { TL_DIR, "c", NULL, 0, 0, 0, 0, NULL } };
	char msg[256];
	CHECK(apply_limited(&f, &lim, 0, l, N(l), msg, sizeof(msg)) < 0);
	CHECK(strstr(msg, "'c': the image has more than 3 entries (config key `image_max_entries`)") != NULL);
	struct stat st;
	CHECK(lstat_in(&f, "c", &st) < 0);
	rm_rf(f.base);
}

/* Directories and symlinks write no file data, yet each takes an inode and
 * a block: 50 of them with 1000-byte targets must not fit in 64 KiB. */
TEST(links_and_directories_count_toward_the_bytes_cap)
{
	struct fixture f;
	setup(&f);
	struct sbx_image_limits lim = limits;
	lim.max_bytes = 64 << 10;
	static char target[1001], names[100][8];
	memset(target, 't', 1000);
	struct tl_entry l[100];
	for (int i = 0; i < 100; i++) {
		snprintf(names[i], sizeof(names[i]), "%c%02d", i < 50 ? 'd' : 'l', i);
		l[i] = (struct tl_entry){ i < 50 ? TL_DIR : TL_SYMLINK, names[i], i < 50 ? NULL : target, 0, 0, 0, 0, NULL };
	}
	char msg[256];
	CHECK(apply_limited(&f, &lim, 0, l, N(l), msg, sizeof(msg)) < 0);
	CHECK(strstr(msg, "the image takes more than 0 MiB (config key `image_max_mb`)") != NULL);
	rm_rf(f.base);
}

TEST(repeated_opaque_markers_act_once)
{
	struct fixture f;
	setup(&f);
	const struct tl_entry lower[] = { { TL_FILE, "d/old", "x", 0, 0, 0, 0, NULL } };
	const struct tl_entry upper[] = { { TL_FILE, "d/.wh..wh..opq", "", 0, 0, 0, 0, NULL },
					  { TL_FILE, "d/new", "y", 0, 0, 0, 0, NULL },
					  { TL_FILE, "d/.wh..wh..opq", "", 0, 0, 0, 0, NULL },
					  { TL_DIR, "d", NULL, 0700, 0, 0, 7777, NULL },
					  { TL_DIR, "d", NULL, 0700, 0, 0, 8888, NULL } };
	const struct tl_entry *layers[] = { lower, upper };
	size_t counts[] = { N(lower), N(upper) };
	CHECK(apply(&f, layers, counts, 2, TL_GZIP, NULL, 0) == 0);
	struct stat st;
	CHECK(lstat_in(&f, "d/old", &st) < 0);
	CHECK(lstat_in(&f, "d/new", &st) == 0);
	CHECK(lstat_in(&f, "d", &st) == 0);
	CHECK_INT(st.st_mtime, 8888); /* the last time a layer gave d */
	rm_rf(f.base);
}

TEST(an_archive_refuses_device_nodes_and_fifos)
{
	struct fixture f;
	setup(&f);
	const struct tl_entry chr[] = { { TL_CHR, "cfg.json", NULL, 0666, 0, 0, 0, NULL } };
	const struct tl_entry fifo[] = { { TL_FIFO, "manifest.json", NULL, 0600, 0, 0, 0, NULL } };
	char msg[256];
	CHECK(apply_limited(&f, &limits, SBX_ROOTFS_NO_SPECIAL, chr, N(chr), msg, sizeof(msg)) < 0);
	CHECK(strstr(msg, "'cfg.json' is a device node or FIFO: refused") != NULL);
	CHECK(apply_limited(&f, &limits, SBX_ROOTFS_NO_SPECIAL, fifo, N(fifo), msg, sizeof(msg)) < 0);
	struct stat st;
	CHECK(lstat_in(&f, "cfg.json", &st) < 0);
	CHECK(lstat_in(&f, "manifest.json", &st) < 0);
	rm_rf(f.base);
}
