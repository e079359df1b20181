/* A template's directory published with one rename: over what another
 * version's removal left (no "key" file), never over a complete one. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "vm/snapshot.h"

static char root[] = "/tmp/sbx-snapshot-XXXXXX";
static char tmp[256], final[256];

static void put(const char *dir, const char *name, const char *text)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd >= 0) {
		ssize_t w = write(fd, text, strlen(text));
		(void)w;
		close(fd);
	}
}

static bool has(const char *dir, const char *name)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

static void setup(void)
{
	if (tmp[0] == '\0' && mkdtemp(root) != NULL) {
		snprintf(tmp, sizeof(tmp), "%s/%064d.1-0.tmp", root, 0);
		snprintf(final, sizeof(final), "%s/%064d", root, 0);
	}
	snapshot_remove_dir(tmp);
	snapshot_remove_dir(final);
	mkdir(tmp, 0700);
	put(tmp, "key", "new");
	put(tmp, "console", "booted\n");
}

TEST(over_nothing)
{
	setup();
	sbx_error_t err = NULL;
	CHECK_INT(snapshot_place(tmp, final, &err), 0);
	CHECK(has(final, "key") && has(final, "console") && !has(tmp, "key"));
}

TEST(over_what_an_older_removal_left)
{
	setup();
	mkdir(final, 0700);
	put(final, "console", "old\n");
	sbx_error_t err = NULL;
	CHECK_INT(snapshot_place(tmp, final, &err), 0);
	CHECK(has(final, "key"));
}

TEST(never_over_a_complete_template)
{
	setup();
	mkdir(final, 0700);
	put(final, "key", "old");
	sbx_error_t err = NULL;
	CHECK_INT(snapshot_place(tmp, final, &err), -1);
	CHECK(err != NULL && (err->errnum == ENOTEMPTY || err->errnum == EEXIST));
	sbx_error_free(&err);
	CHECK(has(final, "key") && has(tmp, "key"));
	snapshot_remove_dir(tmp);
	snapshot_remove_dir(final);
	rmdir(root);
}
