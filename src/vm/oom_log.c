#include "vm/oom_log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"

/* /dev/kmsg refuses a read smaller than its record (up to 8 KiB with
 * the dictionary). */
#define RECORD_MAX 8192

static bool record_matches(const char *rec, pid_t pid, uint64_t since_us)
{
	unsigned long long usec;
	int text_at = 0;
	if (sscanf(rec, "%*u,%*u,%llu,%*[^;];%n", &usec, &text_at) < 1 || text_at == 0 || usec < since_us)
		return false;
	char needle[48];
	snprintf(needle, sizeof(needle), "Killed process %ld (", (long)pid);
	return strstr(rec + text_at, needle) != NULL;
}

bool oom_log_killed(int fd, pid_t pid, uint64_t since_us)
{
	char buf[RECORD_MAX + 1];
	size_t have = 0;
	bool found = false;
	for (;;) {
		ssize_t n = read(fd, buf + have, RECORD_MAX - have);
		if (n < 0 && errno == EINTR)
			continue;
		/* EPIPE: records were overwritten while we read; go on. */
		if (n < 0 && errno == EPIPE)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
		buf[have] = '\0';
		char *line = buf, *nl;
		while ((nl = memchr(line, '\n', have - (size_t)(line - buf))) != NULL) {
			*nl = '\0';
			if (line[0] != ' ' && record_matches(line, pid, since_us))
				found = true;
			line = nl + 1;
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		/* A line longer than any record: drop it rather than stall. */
		if (have == RECORD_MAX)
			have = 0;
	}
	return found;
}

bool oom_killed(pid_t pid, uint64_t since_us)
{
	if (pid <= 0)
		return false;
	cleanup_close int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	return fd >= 0 && oom_log_killed(fd, pid, since_us);
}
