/* The data disk: made once as a sparse ext4 file, then kept. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "worker/worker_disk.h"

static char dir[64];

__attribute__((destructor)) static void remove_dir(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (dir[0] != '\0' && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

TEST(made_once_then_kept)
{
	snprintf(dir, sizeof(dir), "/tmp/sbx-worker-disk.XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	setenv("III_SANDBOX_STATE_DIR", dir, 1); /* the scratch template lives there */
	char wdir[PATH_MAX], disk[PATH_MAX + 16];
	snprintf(wdir, sizeof(wdir), "%s/w", dir);
	CHECK_INT(mkdir(wdir, 0700), 0);
	snprintf(disk, sizeof(disk), "%s/data.ext4", wdir);
	sbx_error_t err = NULL;
	bool created = false;
	CHECK_INT(worker_data_disk_ensure(wdir, 64, &created, &err), 0);
	CHECK(created);
	struct stat a, b;
	CHECK_INT(stat(disk, &a), 0);
	CHECK_INT(a.st_size, 64 << 20);
	CHECK((long long)a.st_blocks * 512 < a.st_size);
	CHECK_INT(a.st_mode & 0777, 0600);
	/* A second call (another size configured meanwhile) keeps it. */
	CHECK_INT(worker_data_disk_ensure(wdir, 128, &created, &err), 0);
	CHECK(!created);
	CHECK_INT(stat(disk, &b), 0);
	CHECK_INT(b.st_ino, a.st_ino);
	CHECK_INT(b.st_size, 64 << 20);
	/* Nothing but the disk is left in the directory. */
	char cmd[PATH_MAX + 64];
	snprintf(cmd, sizeof(cmd), "test \"$(ls -A '%s')\" = data.ext4", wdir);
	CHECK_INT(system(cmd), 0);
}

TEST(a_directory_in_its_place_is_refused)
{
	char wdir[PATH_MAX], disk[PATH_MAX + 16];
	snprintf(wdir, sizeof(wdir), "%s/x", dir);
	CHECK_INT(mkdir(wdir, 0700), 0);
	snprintf(disk, sizeof(disk), "%s/data.ext4", wdir);
	CHECK_INT(mkdir(disk, 0700), 0);
	sbx_error_t err = NULL;
	bool created;
	CHECK_INT(worker_data_disk_ensure(wdir, 64, &created, &err), -1);
	CHECK(strstr(sbx_error_msg(err), "is not a regular file") != NULL);
	sbx_error_free(&err);
}
