#include "vm/qmp.h"

#include "common/clock.h"

#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* The next line into out (NUL-terminated, without the newline). */
static int read_line(struct qmp *q, char *out, size_t cap, int64_t deadline, sbx_error_t *err)
{
	for (;;) {
		char *nl = memchr(q->buf, '\n', q->len);
		if (nl != NULL) {
			size_t n = (size_t)(nl - q->buf);
			if (n >= cap)
				return sbx_error_set(err, EMSGSIZE, "qmp: answer longer than %zu bytes", cap);
			memcpy(out, q->buf, n);
			out[n] = '\0';
			q->len -= n + 1;
			memmove(q->buf, nl + 1, q->len);
			return 0;
		}
		if (q->len == sizeof(q->buf))
			return sbx_error_set(err, EMSGSIZE, "qmp: line longer than %zu bytes", sizeof(q->buf));
		int64_t left = deadline - sbx_now_ms();
		if (left <= 0)
			return sbx_error_set(err, ETIMEDOUT, "qmp: no answer");
		struct pollfd p = { .fd = q->fd, .events = POLLIN };
		int r = poll(&p, 1, left > 1000 ? 1000 : (int)left);
		if (r < 0 && errno != EINTR)
			return sbx_error_errno(err, errno, "qmp: poll");
		if (r <= 0)
			continue;
		ssize_t got = read(q->fd, q->buf + q->len, sizeof(q->buf) - q->len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return sbx_error_errno(err, errno, "qmp: read");
		if (got == 0)
			return sbx_error_set(err, EPIPE, "qmp: QEMU closed the monitor");
		q->len += (size_t)got;
	}
}

static int send_cmd(struct qmp *q, const char *cmd, int pass_fd, sbx_error_t *err)
{
	size_t len = strlen(cmd);
	struct iovec iov[2] = { { (void *)cmd, len }, { "\n", 1 } };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	if (pass_fd >= 0) {
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
	}
	ssize_t n;
	while ((n = sendmsg(q->fd, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (n < 0)
		return sbx_error_errno(err, errno, "qmp: send");
	/* Commands are a few dozen bytes: a short write on a fresh stream
	 * socket does not happen, but is not ignored either. */
	if ((size_t)n != len + 1)
		return sbx_error_set(err, EIO, "qmp: short send");
	return 0;
}

int qmp_call(struct qmp *q, const char *cmd, int pass_fd, char *reply, size_t cap, int64_t deadline,
	     sbx_error_t *err)
{
	if (send_cmd(q, cmd, pass_fd, err) < 0)
		return -1;
	char line[QMP_LINE_MAX];
	for (;;) {
		if (read_line(q, line, sizeof(line), deadline, err) < 0)
			return -1;
		if (strncmp(line, "{\"return\"", 9) == 0) {
			if (reply != NULL && cap > 0) {
				size_t n = strlen(line);
				if (n >= cap)
					return sbx_error_set(err, EMSGSIZE, "qmp: answer longer than %zu bytes", cap);
				memcpy(reply, line, n + 1);
			}
			return 0;
		}
		if (strncmp(line, "{\"error\"", 8) == 0) {
			const char *d = strstr(line, "\"desc\": \"");
			const char *end = d != NULL ? strchr(d + 9, '"') : NULL;
			int dl = end != NULL ? (int)(end - (d + 9)) : 0;
			return sbx_error_set(err, EIO, "qmp: %.*s", dl > 200 ? 200 : dl, end != NULL ? d + 9 : "error");
		}
		/* Anything else is an event: skip it. */
	}
}

int qmp_sync(struct qmp *q, int64_t deadline, sbx_error_t *err)
{
	static atomic_uint next;
	char tag[40], cmd[96];
	snprintf(tag, sizeof(tag), "\"sbx-sync-%d-%u\"", (int)getpid(), atomic_fetch_add(&next, 1));
	snprintf(cmd, sizeof(cmd), "{\"execute\": \"query-status\", \"id\": %s}", tag);
	if (send_cmd(q, cmd, -1, err) < 0)
		return -1;
	char line[QMP_LINE_MAX];
	for (;;) {
		if (read_line(q, line, sizeof(line), deadline, err) < 0)
			return -1;
		/* Its answer (QEMU echoes the id): what came before is stale. */
		if (strstr(line, tag) != NULL)
			return 0;
	}
}

int qmp_open(struct qmp *q, int fd, int64_t deadline, sbx_error_t *err)
{
	q->fd = fd;
	q->len = 0;
	char line[QMP_LINE_MAX];
	if (read_line(q, line, sizeof(line), deadline, err) < 0)
		goto fail;
	if (strncmp(line, "{\"QMP\"", 6) != 0) {
		sbx_error_set(err, EPROTO, "qmp: no greeting");
		goto fail;
	}
	if (qmp_call(q, "{\"execute\": \"qmp_capabilities\"}", -1, NULL, 0, deadline, err) < 0)
		goto fail;
	return 0;
fail:
	qmp_close(q);
	return sbx_error_prefix(err, "QEMU monitor");
}

void qmp_close(struct qmp *q)
{
	if (q->fd >= 0)
		close(q->fd);
	q->fd = -1;
}
