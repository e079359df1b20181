/* worker_config_read: a file of config_dir as listed may be swapped
 * before it is opened; a FIFO or a symlink put there neither blocks the
 * supervisor nor is read. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "worker/worker_launch.h"

static char dir[64];

__attribute__((destructor)) static void remove_dir(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (dir[0] != '\0' && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

static const char *at(const char *name)
{
	static char buf[PATH_MAX];
	snprintf(buf, sizeof(buf), "%s/%s", dir, name);
	return buf;
}

TEST(regular_files_only_and_never_blocks)
{
	snprintf(dir, sizeof(dir), "/tmp/sbx-config-read.XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	FILE *f = fopen(at("config.yaml"), "w");
	CHECK(f != NULL);
	fputs("a: 1\n", f);
	fclose(f);
	CHECK_INT(mkfifo(at("fifo"), 0600), 0);
	CHECK_INT(symlink("/etc/passwd", at("link")), 0);
	int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	CHECK(dfd >= 0);
	sbx_error_t err = NULL;
	char *data = NULL;
	size_t len = 0;
	CHECK_INT(worker_config_read(dfd, "config.yaml", 1024, &data, &len, &err), 0);
	CHECK_INT((int)len, 5);
	CHECK(memcmp(data, "a: 1\n", 5) == 0);
	free(data);
	CHECK_INT(worker_config_read(dfd, "config.yaml", 4, &data, &len, &err), -1);
	CHECK_INT(err->errnum, EFBIG);
	sbx_error_free(&err);
	/* A FIFO nobody writes: an open that blocked would never return (the
	 * alarm ends the test instead). */
	alarm(10);
	CHECK_INT(worker_config_read(dfd, "fifo", 1024, &data, &len, &err), -1);
	alarm(0);
	CHECK(strstr(sbx_error_msg(err), "fifo changed into a special file") != NULL);
	sbx_error_free(&err);
	CHECK_INT(worker_config_read(dfd, "link", 1024, &data, &len, &err), -1);
	CHECK_INT(err->errnum, ELOOP);
	sbx_error_free(&err);
	close(dfd);
}
