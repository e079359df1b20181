/* The last lines of a log file, read from its end and bounded in bytes, so
 * a 10 MiB log costs at most max_bytes of memory. */
#ifndef SBX_WORKER_LOG_TAIL_H
#define SBX_WORKER_LOG_TAIL_H

#include <stddef.h>

#include "common/error.h"

/* The last `lines` lines of path (a final line without '\n' counts), at
 * most max_bytes of them (the oldest cut first).  A missing file is empty.
 * *out is malloc'd (not NUL-terminated; free it even when *len is 0). */
int log_tail_read(const char *path, size_t lines, size_t max_bytes, char **out, size_t *len, sbx_error_t *err);

#endif
