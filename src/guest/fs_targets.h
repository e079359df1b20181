/* The files fs::grep and fs::sed work on: a single file, or the regular
 * files of a tree filtered by include/exclude globs (fs_glob.h).  A
 * symlinked root is resolved first; symlinks inside the tree are never
 * followed. */
#ifndef SBX_GUEST_FS_TARGETS_H
#define SBX_GUEST_FS_TARGETS_H

#include <stdbool.h>
#include <sys/stat.h>

#include "common/error.h"

struct fs_target {
	const char *path; /* as asked: results are named under it */
	char *open_path;  /* what to open (the link's target for a symlink) */
	struct stat st;   /* of open_path */
};

/* Fails with ENOENT "path not found: <path>" when the root is missing. */
int fs_target_open(struct fs_target *t, const char *path, sbx_error_t *err);
void fs_target_free(struct fs_target *t);

/* Called for each file: open it with openat(dirfd, name, ...); `path` names
 * it for results.  Returns 0, FS_WALK_STOP (fs_walk.h) or -1. */
typedef int (*fs_file_fn)(void *ctx, int dirfd, const char *name, const char *path, sbx_error_t *err);

/* A directory root needs `recursive`: PROTO_FS_EINVALID otherwise. */
int fs_target_check(const struct fs_target *t, bool recursive, sbx_error_t *err);

/* A directory root needs `recursive` (else PROTO_FS_EINVALID); a file root
 * is matched by its basename. */
int fs_target_each_file(struct fs_target *t, bool recursive, char *const *include, char *const *exclude,
			fs_file_fn fn, void *ctx, sbx_error_t *err);

#endif
