/* An append-only log file that never grows past a cap: when the next write
 * would cross it, the oldest bytes go (the file is rewritten to its newest
 * half, cut at a line start, through a temp file and a rename, so a crash
 * leaves either the old or the new file).  Not thread-safe: one writer. */
#ifndef SBX_WORKER_LOG_CAP_H
#define SBX_WORKER_LOG_CAP_H

#include <stddef.h>

#include "common/error.h"

#define LOG_CAP_DEFAULT (10u * 1024u * 1024u)

struct log_cap {
	char *path;
	int fd;
	size_t size; /* bytes in the file */
	size_t cap;
};

/* Opens (creating 0600) path for appending; what it holds already counts. */
int log_cap_open(struct log_cap *l, const char *path, size_t cap, sbx_error_t *err);
/* Appends len bytes; a chunk larger than half the cap keeps only its tail. */
int log_cap_write(struct log_cap *l, const void *buf, size_t len, sbx_error_t *err);
void log_cap_close(struct log_cap *l);

#endif
