/* The jails' uid range (jail/jail_ids.h): the lowest free uid, never one
 * held, given back on release. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/error.h"
#include "harness.h"
#include "jail/jail_ids.h"

TEST(uids_lowest_free_distinct_and_released)
{
	char dir[] = "/tmp/sbx-jail-ids.XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	sbx_error_t err = NULL;
	uint32_t a = 0, b = 0, c = 0;
	int fa = -1, fb = -1, fc = -1;
	CHECK_INT(jail_uid_acquire(dir, 900000, 2, &a, &fa, &err), 0);
	CHECK_INT(jail_uid_acquire(dir, 900000, 2, &b, &fb, &err), 0);
	CHECK_INT(a, 900000);
	CHECK_INT(b, 900001);
	/* Both taken: the range is exhausted. */
	CHECK_INT(jail_uid_acquire(dir, 900000, 2, &c, &fc, &err), -1);
	CHECK_INT(err->errnum, EAGAIN);
	sbx_error_free(&err);
	jail_uid_release(fa);
	CHECK_INT(jail_uid_acquire(dir, 900000, 2, &c, &fc, &err), 0);
	CHECK_INT(c, 900000);
	jail_uid_release(fb);
	jail_uid_release(fc);
	char path[64];
	snprintf(path, sizeof(path), "%s/900000", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/900001", dir);
	unlink(path);
	rmdir(dir);
}

TEST(uids_missing_dir_fails)
{
	sbx_error_t err = NULL;
	uint32_t u;
	int fd;
	CHECK_INT(jail_uid_acquire("/nonexistent/sbx-jail", 900000, 4, &u, &fd, &err), -1);
	CHECK_INT(err->errnum, ENOENT);
	sbx_error_free(&err);
}
