#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/* sbx_state_dir as an unprivileged user (root gets /var/lib): the path it
 * returns, read back through a pipe from a child that dropped to nobody. */
static char *state_dir_as_nobody(const char *sub)
{
	int fd[2];
	if (pipe(fd) < 0)
		return NULL;
	pid_t pid = fork();
	if (pid == 0) {
		close(fd[0]);
		if (geteuid() == 0 && (setgid(65534) < 0 || setuid(65534) < 0))
			_exit(1);
		sbx_error_t err = NULL;
		char *d = sub != NULL ? sbx_state_subdir(sub, &err) : sbx_state_dir(&err);
		if (d == NULL)
			_exit(1);
		ssize_t n = write(fd[1], d, strlen(d));
		_exit(n == (ssize_t)strlen(d) ? 0 : 1);
	}
	close(fd[1]);
	static char buf[256];
	ssize_t n = read(fd[0], buf, sizeof(buf) - 1);
	close(fd[0]);
	int status = 0;
	waitpid(pid, &status, 0);
	if (n <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return NULL;
	buf[n] = '\0';
	return buf;
}

TEST(xdg_then_home)
{
	char want[128];
	unsetenv("III_SANDBOX_STATE_DIR");
	unsetenv("STATE_DIRECTORY");
	CHECK_INT(chown(base, 65534, 65534), 0);
	setenv("XDG_STATE_HOME", base, 1);
	snprintf(want, sizeof(want), "%s/sandbox-libkrun", base);
	CHECK_STR(state_dir_as_nobody(NULL), want);
	unsetenv("XDG_STATE_HOME");
	setenv("HOME", base, 1);
	snprintf(want, sizeof(want), "%s/.local/state/sandbox-libkrun", base);
	CHECK_STR(state_dir_as_nobody(NULL), want);
	snprintf(want, sizeof(want), "%s/.local/state/sandbox-libkrun/vms", base);
	CHECK_STR(state_dir_as_nobody("vms"), want);
	CHECK_INT(chown(base, 0, 0), 0);
}

TEST(systemd_state_directory_first_entry)
{
	char want[128], list[300];
	unsetenv("III_SANDBOX_STATE_DIR");
	snprintf(want, sizeof(want), "%s/unit", base);
	snprintf(list, sizeof(list), "%s:%s/second", want, base);
	setenv("STATE_DIRECTORY", list, 1);
	setenv("XDG_STATE_HOME", base, 1);
	sbx_error_t err = NULL;
	char *d = sbx_state_dir(&err);
	CHECK_STR(d, want);
	free(d);
	unsetenv("STATE_DIRECTORY");
	unsetenv("XDG_STATE_HOME");
}

TEST(root_uses_var_lib)
{
	if (geteuid() != 0) {
		sbx_test_skip("needs root");
		return;
	}
	unsetenv("III_SANDBOX_STATE_DIR");
	unsetenv("STATE_DIRECTORY");
	setenv("XDG_STATE_HOME", base, 1);
	sbx_error_t err = NULL;
	char *d = sbx_state_dir(&err);
	CHECK_STR(d, "/var/lib/sandbox-libkrun");
	free(d);
	unsetenv("XDG_STATE_HOME");
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
