/* A paused VM's directory (vm/pause_dir.h): 0700 whatever the umask,
 * a new one only; kept files are 0600 links of the VM's (the same
 * inode), restored ones links back; text round-trips bounded; the size
 * counts allocated blocks; removal leaves nothing; a symbolic link in
 * place of a file to keep or restore is refused, and what it points to
 * keeps its mode. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "vm/pause_dir.h"

static char base[] = "/tmp/sbx-pause-dir-test-XXXXXX";

static void path(char *out, size_t cap, const char *a, const char *b)
{
	snprintf(out, cap, "%s/%s%s%s", base, a, b[0] ? "/" : "", b);
}

TEST(create_keep_restore_remove)
{
	CHECK(mkdtemp(base) != NULL);
	char dir[256], src[256], kept[256], back[256];
	path(dir, sizeof(dir), "paused", "");
	path(src, sizeof(src), "scratch.src", "");
	path(kept, sizeof(kept), "paused", PAUSE_SCRATCH);
	path(back, sizeof(back), "scratch.back", "");
	sbx_error_t err = NULL;
	mode_t old = umask(0);
	CHECK_INT(pause_dir_create(dir, &err), 0);
	umask(old);
	struct stat st;
	CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
	/* Made here, never an existing one. */
	CHECK_INT(pause_dir_create(dir, &err), -1);
	CHECK_INT(err->errnum, EEXIST);
	sbx_error_free(&err);

	int fd = open(src, O_WRONLY | O_CREAT | O_EXCL, 0644);
	CHECK(fd >= 0);
	static char block[65536];
	memset(block, 'x', sizeof(block));
	CHECK(write(fd, block, sizeof(block)) == (ssize_t)sizeof(block));
	close(fd);
	CHECK_INT(pause_dir_keep(dir, PAUSE_SCRATCH, src, &err), 0);
	struct stat a, b;
	CHECK(stat(src, &a) == 0 && stat(kept, &b) == 0);
	CHECK(a.st_ino == b.st_ino);             /* a link, no copy */
	CHECK_INT(b.st_mode & 0777, 0600);
	unlink(src);                              /* what the keeper does */
	CHECK(access(kept, F_OK) == 0);

	int sfd = pause_dir_new_file(dir, PAUSE_STATE, &err);
	CHECK(sfd >= 0);
	CHECK(write(sfd, block, 4096) == 4096);
	close(sfd);
	CHECK(stat(kept, &b) == 0);
	char st_path[256];
	path(st_path, sizeof(st_path), "paused", PAUSE_STATE);
	CHECK(stat(st_path, &a) == 0 && (a.st_mode & 0777) == 0600);
	CHECK_INT(pause_dir_new_file(dir, PAUSE_STATE, &err), -1); /* new only */
	sbx_error_free(&err);

	CHECK_INT(pause_dir_write_text(dir, PAUSE_CONSOLE, "boot line 1\nline 2\n", &err), 0);
	char *text = pause_dir_read_text(dir, PAUSE_CONSOLE, 1024);
	CHECK_STR(text, "boot line 1\nline 2\n");
	free(text);
	text = pause_dir_read_text(dir, PAUSE_CONSOLE, 4); /* bounded */
	CHECK_STR(text, "boot");
	free(text);
	CHECK(pause_dir_read_text(dir, PAUSE_IMAGE, 16) == NULL);

	CHECK(pause_dir_size(dir) >= 65536 + 4096);
	/* The store image's second name is the store's bytes: not the
	 * pause's (snapshot_store_mb counts what the pause added). */
	uint64_t before = pause_dir_size(dir);
	char store[256];
	path(store, sizeof(store), "store.src", "");
	fd = open(store, O_WRONLY | O_CREAT | O_EXCL, 0644);
	CHECK(fd >= 0);
	for (int i = 0; i < 16; i++)
		CHECK(write(fd, block, sizeof(block)) == (ssize_t)sizeof(block));
	close(fd);
	CHECK_INT(pause_dir_link(dir, PAUSE_STORE_IMAGE, store, &err), 0);
	CHECK(pause_dir_size(dir) == before);
	unlink(store);
	CHECK_INT(pause_dir_restore(dir, PAUSE_SCRATCH, back, &err), 0);
	CHECK(stat(back, &a) == 0 && a.st_ino == b.st_ino);
	CHECK_INT(pause_dir_restore(dir, PAUSE_SCRATCH, back, &err), -1); /* new only */
	sbx_error_free(&err);

	pause_dir_remove(dir);
	CHECK(access(dir, F_OK) < 0 && errno == ENOENT);
	CHECK(access(back, F_OK) == 0); /* the restored link stays */
	unlink(back);
	rmdir(base);
}

TEST(a_link_in_place_of_a_file_is_not_followed)
{
	char tmp[] = "/tmp/sbx-pause-link-test-XXXXXX";
	CHECK(mkdtemp(tmp) != NULL);
	char dir[64], target[64], link_[64], planted[128], back[64];
	snprintf(dir, sizeof(dir), "%s/paused", tmp);
	snprintf(target, sizeof(target), "%s/host-file", tmp);
	snprintf(link_, sizeof(link_), "%s/scratch.link", tmp);
	snprintf(planted, sizeof(planted), "%s/%s", dir, PAUSE_IMAGE);
	snprintf(back, sizeof(back), "%s/image.back", tmp);
	int fd = open(target, O_WRONLY | O_CREAT | O_EXCL, 0644);
	CHECK(fd >= 0);
	close(fd);
	CHECK(chmod(target, 0644) == 0);
	CHECK(symlink(target, link_) == 0);
	sbx_error_t err = NULL;
	CHECK_INT(pause_dir_create(dir, &err), 0);
	/* Kept: refused, and the host's file keeps its mode. */
	CHECK_INT(pause_dir_keep(dir, PAUSE_SCRATCH, link_, &err), -1);
	sbx_error_free(&err);
	struct stat st;
	CHECK(stat(target, &st) == 0);
	CHECK_INT(st.st_mode & 0777, 0644);
	/* Restored: a link planted in the directory is not put back. */
	CHECK(symlink(target, planted) == 0);
	CHECK_INT(pause_dir_restore(dir, PAUSE_IMAGE, back, &err), -1);
	sbx_error_free(&err);
	CHECK(lstat(back, &st) < 0 && errno == ENOENT);
	pause_dir_remove(dir);
	CHECK(access(dir, F_OK) < 0);
	unlink(link_);
	unlink(target);
	rmdir(tmp);
}
