#include "vm/run_tool.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/tool_path.h"

extern char **environ;

#define TOOL_OUTPUT_MAX 2048

int run_tool(char *const argv[], sbx_error_t *err)
{
	cleanup_free char *bin = sbx_tool_find(argv[0], err);
	if (bin == NULL)
		return -1;
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return sbx_error_errno(err, errno, "pipe");
	cleanup_close int rd = pfd[0];
	cleanup_close int wr = pfd[1];
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, wr, 1);
	posix_spawn_file_actions_adddup2(&fa, wr, 2);
	pid_t pid;
	int rc = posix_spawn(&pid, bin, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0)
		return sbx_error_errno(err, rc, "run %s", bin);
	close(sbx_steal_fd(wr));
	/* Keep the last TOOL_OUTPUT_MAX bytes; the tool's end says why. */
	char out[TOOL_OUTPUT_MAX + 1];
	size_t len = 0;
	char buf[4096];
	ssize_t n;
	while ((n = read(rd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		size_t k = (size_t)n;
		if (k >= TOOL_OUTPUT_MAX) {
			memcpy(out, buf + k - TOOL_OUTPUT_MAX, TOOL_OUTPUT_MAX);
			len = TOOL_OUTPUT_MAX;
		} else {
			if (len + k > TOOL_OUTPUT_MAX) {
				size_t drop = len + k - TOOL_OUTPUT_MAX;
				memmove(out, out + drop, len - drop);
				len -= drop;
			}
			memcpy(out + len, buf, k);
			len += k;
		}
	}
	out[len] = '\0';
	int status;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return sbx_error_errno(err, errno, "wait for %s", argv[0]);
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == ' '))
		out[--len] = '\0';
	if (WIFEXITED(status))
		return sbx_error_set(err, 0, "%s failed (exit %d): %s", argv[0], WEXITSTATUS(status), out);
	return sbx_error_set(err, 0, "%s killed by signal %d", argv[0], WTERMSIG(status));
}
