/* Iterative directory-tree walk for the fs operations: never follows a
 * symlink, holds one descriptor per level, refuses trees deeper than
 * FS_WALK_MAX_DEPTH and paths longer than PROTO_MAX_PATH with a clear error
 * instead of recursing without bound.  Entries that vanish mid-walk are
 * skipped. */
#ifndef SBX_GUEST_FS_WALK_H
#define SBX_GUEST_FS_WALK_H

#include <sys/stat.h>

#include "common/error.h"

#define FS_WALK_MAX_DEPTH 256

enum fs_walk_event {
	FS_WALK_FILE,     /* anything but a directory (symlinks included) */
	FS_WALK_DIR_PRE,  /* a directory, before its contents */
	FS_WALK_DIR_POST, /* the same directory, after its contents */
};

struct fs_walk_entry {
	int dirfd;             /* the parent directory, for *at() calls */
	const char *name;      /* in dirfd */
	const char *path;      /* display root joined with rel */
	const char *rel;       /* relative to the root, no leading '/' */
	const struct stat *st; /* lstat; NULL for DIR_POST */
};

/* Returns 0 to go on, FS_WALK_SKIP (DIR_PRE: do not enter), FS_WALK_STOP
 * (end the walk successfully) or -1 with *err. */
#define FS_WALK_SKIP 1
#define FS_WALK_STOP 2
typedef int (*fs_walk_fn)(void *ctx, enum fs_walk_event ev, const struct fs_walk_entry *e, sbx_error_t *err);

/* Walks the contents of directory `open_path` (not the directory itself),
 * reporting paths under `display_root` (the path the caller asked for,
 * which may differ from open_path when a symlinked root was resolved). */
int fs_walk(const char *open_path, const char *display_root, fs_walk_fn fn, void *ctx, sbx_error_t *err);

#endif
