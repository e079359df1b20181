/* The capped log file (see log_cap.h). */
#include "worker/log_cap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int log_cap_open(struct log_cap *l, const char *path, size_t cap, sbx_error_t *err)
{
	*l = (struct log_cap){ .fd = -1, .cap = cap < 2 ? 2 : cap };
	l->path = strdup(path);
	if (l->path == NULL)
		return sbx_error_errno(err, ENOMEM, "log %s", path);
	l->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	struct stat st;
	if (l->fd < 0 || fstat(l->fd, &st) < 0) {
		sbx_error_errno(err, errno, "open %s", path);
		log_cap_close(l);
		return -1;
	}
	l->size = (size_t)st.st_size;
	return 0;
}

/* Rewrites the file as its newest `keep` bytes (from the first line start
 * among them, when there is one) followed by `tail`. */
static int compact(struct log_cap *l, size_t keep, const char *tail, size_t tail_len, sbx_error_t *err)
{
	cleanup_free char *buf = keep > 0 ? malloc(keep) : NULL;
	if (keep > 0 && buf == NULL)
		return sbx_error_errno(err, ENOMEM, "log %s", l->path);
	cleanup_close int in = open(l->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (in < 0)
		return sbx_error_errno(err, errno, "open %s", l->path);
	size_t got = 0;
	off_t from = (off_t)(l->size - keep);
	while (got < keep) {
		ssize_t n = pread(in, buf + got, keep - got, from + (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sbx_error_errno(err, errno, "read %s", l->path);
		if (n == 0)
			break;
		got += (size_t)n;
	}
	size_t skip = 0;
	const char *nl = got > 0 ? memchr(buf, '\n', got) : NULL;
	if (nl != NULL && nl + 1 < buf + got)
		skip = (size_t)(nl + 1 - buf);
	cleanup_free char *tmp = NULL;
	if (asprintf(&tmp, "%s.tmp", l->path) < 0)
		return sbx_error_errno(err, ENOMEM, "log %s", l->path);
	int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (out < 0)
		return sbx_error_errno(err, errno, "open %s", tmp);
	if (write_all(out, buf + skip, got - skip) < 0 || write_all(out, tail, tail_len) < 0 ||
	    rename(tmp, l->path) < 0) {
		int e = errno;
		close(out);
		unlink(tmp);
		return sbx_error_errno(err, e, "rewrite %s", l->path);
	}
	close(l->fd);
	l->fd = out;
	l->size = got - skip + tail_len;
	return 0;
}

int log_cap_write(struct log_cap *l, const void *buf, size_t len, sbx_error_t *err)
{
	if (l->fd < 0)
		return sbx_error_set(err, EBADF, "log %s is closed", l->path);
	if (l->size + len <= l->cap) {
		if (write_all(l->fd, buf, len) < 0)
			return sbx_error_errno(err, errno, "write %s", l->path);
		l->size += len;
		return 0;
	}
	size_t half = l->cap / 2;
	if (len >= half)
		return compact(l, 0, (const char *)buf + (len - half), half, err);
	size_t keep = half - len;
	return compact(l, keep < l->size ? keep : l->size, buf, len, err);
}

void log_cap_close(struct log_cap *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	free(l->path);
	l->path = NULL;
}
