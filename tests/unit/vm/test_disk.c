#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "vm/disk.h"

#define SIZE (256ull << 20)

static char state[] = "/tmp/sbx-disk-test-XXXXXX";

static int ext4_magic(const char *path)
{
	unsigned char m[2] = { 0, 0 };
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? pread(fd, m, 2, 1080) : -1;
	if (fd >= 0)
		close(fd);
	return n == 2 ? m[0] | m[1] << 8 : -1;
}

TEST(scratch_disks_are_sparse_copies_of_one_template)
{
	CHECK(mkdtemp(state) != NULL);
	setenv("III_SANDBOX_STATE_DIR", state, 1);
	char a[256], b[256], tpl[256];
	snprintf(a, sizeof(a), "%s/a.ext4", state);
	snprintf(b, sizeof(b), "%s/b.ext4", state);
	snprintf(tpl, sizeof(tpl), "%s/scratch/ext4-v2-%llu.img", state, SIZE);
	sbx_error_t err = NULL;
	CHECK(disk_scratch_create(a, SIZE, &err) == 0);
	struct stat st, tst;
	CHECK(stat(tpl, &tst) == 0);
	CHECK(disk_scratch_create(b, SIZE, &err) == 0);
	CHECK(stat(tpl, &st) == 0);
	CHECK_INT(st.st_ino, tst.st_ino); /* built once */
	CHECK(stat(b, &st) == 0);
	CHECK_INT(st.st_size, SIZE);
	CHECK_INT(st.st_mode & 0777, 0600);
	CHECK((long long)st.st_blocks * 512 < 16ll << 20); /* holes kept */
	CHECK_INT(ext4_magic(a), 0xEF53);
	CHECK_INT(ext4_magic(b), 0xEF53);
	/* Every block group's inode table is marked zeroed: no guest runs
	 * ext4lazyinit. */
	char cmd[400], line[256];
	snprintf(cmd, sizeof(cmd), "dumpe2fs %s 2>/dev/null", b);
	FILE *p = popen(cmd, "r");
	int groups = 0, zeroed = 0;
	while (p != NULL && fgets(line, sizeof(line), p) != NULL) {
		bool group = strncmp(line, "Group ", 6) == 0 && line[6] >= '0' && line[6] <= '9';
		groups += group;
		zeroed += group && strstr(line, "ITABLE_ZEROED") != NULL;
	}
	CHECK(p != NULL && pclose(p) == 0);
	CHECK(groups > 0);
	CHECK_INT(zeroed, groups);
	/* An existing path is never overwritten. */
	CHECK(disk_scratch_create(b, SIZE, &err) < 0);
	CHECK(err != NULL && err->errnum == EEXIST);
	sbx_error_free(&err);
}

TEST(wrong_size_template_is_rebuilt)
{
	char tpl[256], c[256];
	snprintf(tpl, sizeof(tpl), "%s/scratch/ext4-v2-%llu.img", state, SIZE);
	snprintf(c, sizeof(c), "%s/c.ext4", state);
	CHECK(truncate(tpl, 4096) == 0);
	sbx_error_t err = NULL;
	CHECK(disk_scratch_create(c, SIZE, &err) == 0);
	struct stat st;
	CHECK(stat(tpl, &st) == 0);
	CHECK_INT(st.st_size, SIZE);
	CHECK_INT(ext4_magic(c), 0xEF53);
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", state);
	CHECK(system(cmd) == 0);
}
