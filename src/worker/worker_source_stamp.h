/* The stamp of a path:// worker's source tree: what lets a start skip the
 * guest's copy into /workspace when the tree has not changed since the
 * last copy (worker_supervise.c).  Reading the tree's metadata on the host
 * takes milliseconds; the copy under TCG takes seconds. */
#ifndef SBX_WORKER_WORKER_SOURCE_STAMP_H
#define SBX_WORKER_WORKER_SOURCE_STAMP_H

#include "common/error.h"

#define WORKER_STAMP_MAX_DEPTH 64
#define WORKER_STAMP_MAX_ENTRIES 200000

/* SHA-256 (64 hex digits in hex) over every entry under root (an O_PATH
 * or O_RDONLY directory): its path and its metadata (type, mode, owner,
 * size, inode, modification and change times); symlinks are not
 * followed.  A tree deeper or larger than the bounds above is an error,
 * as is any entry that cannot be read: the caller then copies. */
int worker_source_stamp(int root, char hex[65], sbx_error_t *err);

#endif
