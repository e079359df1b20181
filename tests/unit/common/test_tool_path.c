#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/tool_path.h"
#include "harness.h"

/* Removes fake_sbin's directory and its one file. */
static void remove_sbin(const char *dir, const char *name)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	unlink(p);
	rmdir(dir);
}

/* A directory holding an executable `name`, as a fake sbin. */
static int fake_sbin(char *dir, const char *name)
{
	if (mkdtemp(dir) == NULL)
		return -1;
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

TEST(tool_in_sbin_is_found_without_sbin_in_path)
{
	char dir[] = "/tmp/sbx-tool-test-XXXXXX";
	CHECK_INT(fake_sbin(dir, "mkfs.sbxtest"), 0);
	const char *const sbin[] = { "/nonexistent-sbin", dir, NULL };
	sbx_error_t err = NULL;
	char *p = sbx_tool_find_in("mkfs.sbxtest", "/nonexistent-bin:relative", sbin, &err);
	char want[256];
	snprintf(want, sizeof(want), "%s/mkfs.sbxtest", dir);
	CHECK_STR(p, want);
	free(p);
	/* PATH first: the same name in a PATH directory wins. */
	char dir2[] = "/tmp/sbx-tool-test-XXXXXX";
	CHECK_INT(fake_sbin(dir2, "mkfs.sbxtest"), 0);
	p = sbx_tool_find_in("mkfs.sbxtest", dir2, sbin, &err);
	snprintf(want, sizeof(want), "%s/mkfs.sbxtest", dir2);
	CHECK_STR(p, want);
	free(p);
	remove_sbin(dir, "mkfs.sbxtest");
	remove_sbin(dir2, "mkfs.sbxtest");
}

TEST(missing_tool_is_named_with_where_and_package)
{
	const char *const sbin[] = { "/nonexistent-a", "/nonexistent-b", NULL };
	sbx_error_t err = NULL;
	char *p = sbx_tool_find_in("mkfs.ext4", "/nonexistent-bin", sbin, &err);
	CHECK(p == NULL);
	CHECK_STR(sbx_error_msg(err),
		  "mkfs.ext4 not found in PATH (/nonexistent-bin) or /nonexistent-a:/nonexistent-b; install e2fsprogs");
	sbx_error_free(&err);
	p = sbx_tool_find_in("no-such-tool", "/nonexistent-bin", sbin, &err);
	CHECK(p == NULL);
	CHECK_STR(sbx_error_msg(err), "no-such-tool not found in PATH (/nonexistent-bin) or /nonexistent-a:/nonexistent-b");
	sbx_error_free(&err);
}

TEST(default_sbin_dirs_follow_path)
{
	CHECK_STR(sbx_tool_sbin_dirs[0], "/usr/local/sbin");
	CHECK_STR(sbx_tool_sbin_dirs[1], "/usr/sbin");
	CHECK_STR(sbx_tool_sbin_dirs[2], "/sbin");
	CHECK(sbx_tool_sbin_dirs[3] == NULL);
}
