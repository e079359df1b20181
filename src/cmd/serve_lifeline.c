#include "cmd/serve_lifeline.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/log.h"

#define PID_POLL_MS 1000 /* kill(pid, 0) when pidfd_open is not available */

struct lifeline {
	int fd;     /* the pipe's read end, or -1 */
	pid_t pid;  /* the engine, or 0 */
	int pidfd;  /* readable once pid exits, or -1 */
};

/* A decimal in [min, max] filling the whole string. */
static bool parse_int(const char *s, long min, long max, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

/* True when the engine is gone, judging by what poll() saw. */
static bool gone(struct lifeline *l, struct pollfd *p, int n)
{
	for (int i = 0; i < n; i++) {
		if (p[i].revents == 0)
			continue;
		if (p[i].fd == l->pidfd)
			return true;
		char buf[256];
		ssize_t r = read(l->fd, buf, sizeof(buf)); /* data is not a death: drained */
		if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN))
			return true;
	}
	return l->pid > 0 && l->pidfd < 0 && kill(l->pid, 0) < 0 && errno == ESRCH;
}

static void *watch(void *arg)
{
	struct lifeline *l = arg;
	struct pollfd p[2];
	int n = 0;
	if (l->fd >= 0)
		p[n++] = (struct pollfd){ .fd = l->fd, .events = POLLIN };
	if (l->pidfd >= 0)
		p[n++] = (struct pollfd){ .fd = l->pidfd, .events = POLLIN };
	int timeout = l->pid > 0 && l->pidfd < 0 ? PID_POLL_MS : -1;
	for (;;) {
		if (poll(p, (nfds_t)n, timeout) < 0 && errno != EINTR)
			break;
		if (gone(l, p, n))
			break;
	}
	sbx_info("the engine that started this worker is gone (%s): shutting down",
		 l->fd >= 0 ? "III_LIFELINE_FD closed" : "III_ENGINE_PID exited");
	kill(getpid(), SIGTERM);
	return NULL;
}

int lifeline_start(sbx_error_t *err)
{
	static struct lifeline l = { -1, 0, -1 };
	const char *fd_text = getenv("III_LIFELINE_FD");
	const char *pid_text = getenv("III_ENGINE_PID");
	long v;
	if (fd_text != NULL && fd_text[0] != '\0') {
		if (!parse_int(fd_text, 0, INT_MAX, &v) || fcntl((int)v, F_SETFD, FD_CLOEXEC) < 0)
			return sbx_error_set(err, EBADF, "III_LIFELINE_FD=%s is not an open file descriptor", fd_text);
		l.fd = (int)v;
	}
	if (pid_text != NULL && pid_text[0] != '\0') {
		if (!parse_int(pid_text, 1, INT_MAX, &v) || (kill((pid_t)v, 0) < 0 && errno == ESRCH))
			return sbx_error_set(err, ESRCH, "III_ENGINE_PID=%s is not a running process", pid_text);
		l.pid = (pid_t)v;
		l.pidfd = (int)syscall(SYS_pidfd_open, l.pid, 0);
	}
	if (l.fd < 0 && l.pid == 0)
		return 0;
	pthread_attr_t attr;
	pthread_t t;
	if (pthread_attr_init(&attr) != 0)
		return sbx_error_set(err, ENOMEM, "lifeline thread");
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	int rc = pthread_create(&t, &attr, watch, &l);
	pthread_attr_destroy(&attr);
	if (rc != 0)
		return sbx_error_errno(err, rc, "lifeline thread");
	sbx_debug("watching the engine: %s%s%s", l.fd >= 0 ? "III_LIFELINE_FD" : "", l.fd >= 0 && l.pid > 0 ? ", " : "",
		  l.pid > 0 ? "III_ENGINE_PID" : "");
	return 0;
}
