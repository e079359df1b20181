/* Applies image layers (tar, gzip or zstd) in order into a staging tree:
 * whiteouts and opaque directories remove lower-layer content; ownership,
 * modes, links, device nodes, xattrs and mtimes are kept.  Every path is
 * resolved as if the staging directory were "/" (openat2 RESOLVE_IN_ROOT),
 * so no entry, link or symlink can reach outside it. */
#ifndef SBX_IMAGE_LAYER_APPLY_H
#define SBX_IMAGE_LAYER_APPLY_H

#include <stdint.h>

#include "common/error.h"

#define SBX_LAYER_MAX_ENTRIES 1000000
#define SBX_ROOTFS_MAX_BYTES (32ull << 30)

struct sbx_rootfs;

/* dir must exist; it becomes the root of the tree. */
struct sbx_rootfs *sbx_rootfs_open(const char *dir, sbx_error_t *err);
/* Reads one layer archive from fd. */
int sbx_rootfs_apply_layer(struct sbx_rootfs *r, int fd, sbx_error_t *err);
/* Sets the directory mtimes recorded while applying (writes into a
 * directory change its mtime, so they come last). */
int sbx_rootfs_finish(struct sbx_rootfs *r, sbx_error_t *err);
void sbx_rootfs_free(struct sbx_rootfs *r);

#endif
