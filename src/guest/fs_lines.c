#include "guest/fs_lines.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "guest/fs_util.h"

#define FS_LINES_READ (64u * 1024u)

void fs_lines_init(struct fs_lines *l, int fd, const char *path, size_t max)
{
	memset(l, 0, sizeof(*l));
	l->fd = fd;
	l->path = path;
	l->max = max;
}

void fs_lines_free(struct fs_lines *l)
{
	free(l->buf);
	l->buf = NULL;
}

/* Moves pending bytes to the front, grows up to max + one read, reads. */
static int fill(struct fs_lines *l, sbx_error_t *err)
{
	if (l->start > 0) {
		memmove(l->buf, l->buf + l->start, l->end - l->start);
		l->end -= l->start;
		l->start = 0;
	}
	size_t want = l->end + FS_LINES_READ;
	if (want > l->cap) {
		size_t cap = l->cap == 0 ? FS_LINES_READ : l->cap * 2;
		if (cap < want)
			cap = want;
		if (cap > l->max + FS_LINES_READ)
			cap = l->max + FS_LINES_READ;
		if (cap > l->cap) {
			char *b = realloc(l->buf, cap);
			if (b == NULL)
				return sbx_error_errno(err, ENOMEM, "read %s", l->path);
			l->buf = b;
			l->cap = cap;
		}
	}
	for (;;) {
		ssize_t n = read(l->fd, l->buf + l->end, l->cap - l->end);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fs_path_error(err, errno, l->path);
		if (n == 0)
			l->eof = true;
		l->end += (size_t)n;
		return 0;
	}
}

int fs_lines_next(struct fs_lines *l, const char **line, size_t *len, bool *nl, bool *cut, sbx_error_t *err)
{
	for (;;) {
		char *p = l->buf + l->start;
		size_t have = l->end - l->start;
		char *q = have > 0 ? memchr(p, '\n', have) : NULL;
		if (l->skipping) {
			/* the rest of an over-long line */
			l->start = q != NULL ? l->start + (size_t)(q - p) + 1 : l->end;
			l->skipping = q == NULL;
			if (q != NULL)
				continue;
		} else if (q != NULL) {
			size_t n = (size_t)(q - p);
			*line = p;
			*nl = true;
			*cut = n > l->max;
			*len = *cut ? l->max : n;
			l->start += n + 1;
			return 1;
		} else if (have > l->max) {
			/* no newline within max bytes: return those, skip the rest */
			*line = p;
			*len = l->max;
			*nl = false;
			*cut = true;
			l->start = l->end;
			l->skipping = true;
			return 1;
		} else if (l->eof && have > 0) {
			*line = p;
			*len = have;
			*nl = *cut = false;
			l->start = l->end;
			return 1;
		}
		if (l->eof)
			return 0;
		if (fill(l, err) < 0)
			return -1;
	}
}
