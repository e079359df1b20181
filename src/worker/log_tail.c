/* Reading a log's tail (see log_tail.h). */
#include "worker/log_tail.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

int log_tail_read(const char *path, size_t lines, size_t max_bytes, char **out, size_t *len, sbx_error_t *err)
{
	*out = NULL;
	*len = 0;
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno != ENOENT)
		return sbx_error_errno(err, errno, "open %s", path);
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) < 0)
		return sbx_error_errno(err, errno, "stat %s", path);
	size_t size = fd >= 0 ? (size_t)st.st_size : 0;
	size_t want = size < max_bytes ? size : max_bytes;
	char *buf = malloc(want > 0 ? want : 1);
	if (buf == NULL)
		return sbx_error_errno(err, ENOMEM, "log %s", path);
	size_t got = 0;
	while (got < want) {
		ssize_t n = pread(fd, buf + got, want - got, (off_t)(size - want + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			return sbx_error_errno(err, errno, "read %s", path);
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	/* Walk back over `lines` line ends; a final '\n' ends the last line. */
	size_t start = got, seen = 0;
	size_t end = got > 0 && buf[got - 1] == '\n' ? got - 1 : got;
	if (lines == 0) {
		start = got;
	} else {
		start = 0;
		for (size_t i = end; i > 0; i--) {
			if (buf[i - 1] == '\n' && ++seen == lines) {
				start = i;
				break;
			}
		}
	}
	memmove(buf, buf + start, got - start);
	*out = buf;
	*len = got - start;
	return 0;
}
