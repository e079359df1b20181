/* The staging tree being built, shared by layer_apply.c (entries, the
 * charge, finish), layer_whiteout.c (whiteouts, opaque directories) and
 * layer_path.c (paths resolved inside the tree), which sits below both. */
#ifndef SBX_IMAGE_LAYER_INTERNAL_H
#define SBX_IMAGE_LAYER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/error.h"
#include "image/layer_apply.h"
#include "image/path_set.h"

#define WH_PREFIX ".wh."
#define WH_OPAQUE ".wh..wh..opq"

struct sbx_rootfs {
	int root;
	char *dir; /* for messages */
	struct sbx_image_limits limits;
	unsigned flags;
	uint64_t entries, bytes, next_space_check; /* charged so far, all layers */
	struct sbx_path_set layer_paths; /* written by the layer being applied */
	struct sbx_path_set opaque_dirs; /* made opaque by the layer being applied */
	struct sbx_path_set dirs;        /* directories whose mtime finish sets */
	struct timespec *dir_mtimes;     /* by the id of the path in dirs */
	size_t cap_dir_mtimes;
	bool warned_owner;
};

/* layer_path.c */
/* Opens path (flags as for open) resolved inside root. */
int layer_resolve(int root, const char *path, int flags, sbx_error_t *err);
/* Opens the parent directory of path (creating missing ones when create is
 * set, as Docker does for entries) and points *name at the last component. */
int layer_open_parent(struct sbx_rootfs *r, char *path, bool create, const char **name, sbx_error_t *err);

/* layer_whiteout.c */
/* Removes name under parent and everything below it. */
int layer_remove_tree(int parent, const char *name, int depth, sbx_error_t *err);
/* Applies the whiteout entry at path (".wh.<name>" or the opaque marker). */
int layer_apply_whiteout(struct sbx_rootfs *r, char *path, sbx_error_t *err);

#endif
