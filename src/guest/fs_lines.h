/* Buffered line reader for fs::grep and fs::sed: lines split on '\n', at
 * most `max` bytes of a line kept (the rest is skipped and the line marked
 * cut), so a file with one huge line never allocates beyond max. */
#ifndef SBX_GUEST_FS_LINES_H
#define SBX_GUEST_FS_LINES_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

struct fs_lines {
	int fd;
	const char *path; /* for messages */
	char *buf;
	size_t cap, start, end, max;
	bool eof, skipping;
};

void fs_lines_init(struct fs_lines *l, int fd, const char *path, size_t max);
void fs_lines_free(struct fs_lines *l);
/* Returns 1 with the next line in [*line, *line + *len) (without its
 * '\n'; valid until the next call), *nl when it had one and *cut when it
 * was longer than max; 0 at the end; -1 with *err. */
int fs_lines_next(struct fs_lines *l, const char **line, size_t *len, bool *nl, bool *cut, sbx_error_t *err);

#endif
