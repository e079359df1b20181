/* Applies image layers (tar, gzip or zstd) in order into a staging tree:
 * whiteouts and opaque directories remove lower-layer content; ownership,
 * modes, links, device nodes, xattrs and mtimes are kept.  Every path is
 * resolved as if the staging directory were "/" (openat2 RESOLVE_IN_ROOT),
 * so no entry, link or symlink can reach outside it.
 *
 * Layers are hostile: every entry is charged (SBX_ENTRY_COST for its inode,
 * plus its path, link target, xattrs and data) against the limits' entries
 * and bytes, all layers together; the staging file system's free space is
 * checked every SBX_SPACE_CHECK_BYTES of charge; each directory's mtime is
 * kept once and each directory made opaque once per layer, so that the
 * work and memory follow what the layers really cost. */
#ifndef SBX_IMAGE_LAYER_APPLY_H
#define SBX_IMAGE_LAYER_APPLY_H

#include <stdint.h>

#include "common/error.h"
#include "image/image_config.h"

/* An inode and the block a directory, a symlink's target or a small file's
 * tail takes on the staging file system (ext4's block). */
#define SBX_ENTRY_COST 4096ull
#define SBX_SPACE_CHECK_BYTES (64ull << 20)

/* sbx_rootfs_open flags. */
enum {
	/* Refuse device nodes and FIFOs: for an archive's outer tar, whose
	 * files are only read (`image import`). */
	SBX_ROOTFS_NO_SPECIAL = 1,
};

struct sbx_rootfs;

/* dir must exist; it becomes the root of the tree. */
struct sbx_rootfs *sbx_rootfs_open(const char *dir, const struct sbx_image_limits *limits, unsigned flags,
				   sbx_error_t *err);
/* Reads one layer archive from fd. */
int sbx_rootfs_apply_layer(struct sbx_rootfs *r, int fd, sbx_error_t *err);
/* What the layers applied so far were charged, in bytes. */
uint64_t sbx_rootfs_charged(const struct sbx_rootfs *r);
/* Sets the directory mtimes recorded while applying (writes into a
 * directory change its mtime, so they come last). */
int sbx_rootfs_finish(struct sbx_rootfs *r, sbx_error_t *err);
void sbx_rootfs_free(struct sbx_rootfs *r);

#endif
