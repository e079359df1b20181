#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/state_dir.h"
#include "harness.h"

static char base[] = "/tmp/sbx-state-test-XXXXXX";

static int setup(void)
{
	return mkdtemp(base) != NULL ? 0 : -1;
}

TEST(explicit_variable_wins)
{
	CHECK_INT(setup(), 0);
	char want[128];
	snprintf(want, sizeof(want), "%s/explicit/deep", base);
	setenv("III_SANDBOX_STATE_DIR", want, 1);
	setenv("XDG_STATE_HOME", base, 1);
	sbx_error_t err = NULL;
	char *d = sbx_state_dir(&err);
	CHECK_STR(d, want);
	struct stat st;
	CHECK_INT(stat(want, &st), 0);
	CHECK(S_ISDIR(st.st_mode));
	CHECK_INT(st.st_mode & 0777, 0700);
	free(d);
}

TEST(xdg_then_home)
{
	char want[128];
	unsetenv("III_SANDBOX_STATE_DIR");
	setenv("XDG_STATE_HOME", base, 1);
	sbx_error_t err = NULL;
	char *d = sbx_state_dir(&err);
	snprintf(want, sizeof(want), "%s/sandbox-libkrun", base);
	CHECK_STR(d, want);
	free(d);
	unsetenv("XDG_STATE_HOME");
	setenv("HOME", base, 1);
	d = sbx_state_dir(&err);
	snprintf(want, sizeof(want), "%s/.local/state/sandbox-libkrun", base);
	CHECK_STR(d, want);
	free(d);
	d = sbx_state_subdir("vms", &err);
	snprintf(want, sizeof(want), "%s/.local/state/sandbox-libkrun/vms", base);
	CHECK_STR(d, want);
	free(d);
}

TEST(a_file_in_the_way_fails)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/file", base);
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	fclose(f);
	setenv("III_SANDBOX_STATE_DIR", path, 1);
	sbx_error_t err = NULL;
	CHECK(sbx_state_dir(&err) == NULL);
	CHECK(strstr(sbx_error_msg(err), "state directory") != NULL);
	sbx_error_free(&err);
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	CHECK_INT(system(cmd), 0);
}
