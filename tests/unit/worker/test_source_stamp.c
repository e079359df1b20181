/* The source stamp: the same tree gives the same stamp; a changed, added,
 * removed or moved entry gives another; a tree past the bounds is an
 * error (the start then copies). */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "worker/worker_source_stamp.h"

static char dir[64];

__attribute__((destructor)) static void remove_dir(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (dir[0] != '\0' && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

/* The stamp of dir, through an O_PATH descriptor as worker::start has. */
static int stamp(char hex[65])
{
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	sbx_error_t err = NULL;
	int rc = worker_source_stamp(fd, hex, &err);
	if (rc < 0)
		fprintf(stderr, "stamp: %s\n", sbx_error_msg(err));
	sbx_error_free(&err);
	close(fd);
	return rc;
}

TEST(same_tree_same_stamp_any_change_another)
{
	snprintf(dir, sizeof(dir), "/tmp/sbx-worker-stamp.XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	CHECK_INT(chdir(dir), 0); /* the shell commands below work in it */
	CHECK_INT(system("mkdir -p a/b && echo x > a/b/f && ln -s f a/l"), 0);
	char s1[65], s2[65];
	CHECK_INT(stamp(s1), 0);
	CHECK_INT((int)strlen(s1), 64);
	CHECK_INT(stamp(s2), 0);
	CHECK_STR(s1, s2);
	CHECK_INT(system("echo y > a/b/f"), 0); /* same size, new content */
	CHECK_INT(stamp(s2), 0);
	CHECK(strcmp(s1, s2) != 0);
	memcpy(s1, s2, sizeof(s1));
	CHECK_INT(system("touch a/new"), 0);
	CHECK_INT(stamp(s2), 0);
	CHECK(strcmp(s1, s2) != 0);
	memcpy(s1, s2, sizeof(s1));
	CHECK_INT(system("mv a/new a/b/new"), 0);
	CHECK_INT(stamp(s2), 0);
	CHECK(strcmp(s1, s2) != 0);
	memcpy(s1, s2, sizeof(s1));
	CHECK_INT(system("rm a/b/new"), 0);
	CHECK_INT(stamp(s2), 0);
	CHECK(strcmp(s1, s2) != 0);
}

TEST(too_deep_is_an_error)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s", dir);
	for (int i = 0; i <= WORKER_STAMP_MAX_DEPTH + 1 && n + 3 < (int)sizeof(path); i++) {
		n += snprintf(path + n, sizeof(path) - (size_t)n, "/d");
		CHECK_INT(mkdir(path, 0700), 0);
	}
	char s[65];
	CHECK_INT(stamp(s), -1);
}
