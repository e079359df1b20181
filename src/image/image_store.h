/* The image store: read-only erofs images, one per manifest digest, under
 * <state dir>/images/:
 *   erofs/<hex>.erofs        the image (atomically renamed into place)
 *   erofs/<hex>.config.json  its OCI image config
 *   locks/<hex>.lock         flock held while an image is being built
 *   tmp/<hex>/               staging of a build; a leftover is from a killed
 *                            build and is removed by the next one
 *   index.json, index.lock   see image_index.h */
#ifndef SBX_IMAGE_STORE_H
#define SBX_IMAGE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "image/image_config.h"
#include "image/image_ref.h"

/* The state directory (common/state_dir.h) plus "/images", created (0700). */
char *sbx_image_root(sbx_error_t *err);
/* "<root>/erofs/<hex>.erofs" for a digest. */
char *sbx_image_path(const char *root, const char *digest, sbx_error_t *err);

/* Supplies the layers of an image being built: writes layer i, verified,
 * into the empty file fd (at most limits->max_blob_bytes); declared gives
 * the size layer i declares, -1 when it is not known before the copy. */
struct sbx_layer_source {
	size_t n_layers;
	int (*fetch)(void *ud, size_t i, int fd, sbx_error_t *err);
	int64_t (*declared)(void *ud, size_t i);
	void *ud;
	bool log_steps; /* log each layer unpacked and the erofs build (a daemon's pull) */
};

/* Takes the exclusive per-digest lock (waiting for it) and returns its
 * descriptor; closing it releases the lock, as does the holder's death.
 * Building, recording in the index and deleting an image all hold it, so
 * `image rm` cannot delete what a concurrent pull is about to record. */
int sbx_store_lock(const char *root, const char *digest, sbx_error_t *err);

/* Builds the image of digest from its layers unless it is already stored,
 * within limits and the store's free space (store_space.h: checked before
 * each layer, while applying it and before the erofs image is made).
 * The caller holds sbx_store_lock(root, digest), so concurrent callers for
 * one digest build it once.  *built says whether this call did the work. */
int sbx_store_build(const char *root, const char *digest, const char *config, size_t config_len,
		    const struct sbx_layer_source *src, const struct sbx_image_limits *limits, int *built,
		    sbx_error_t *err);

/* Deletes the stored image of digest (and its config) unless the index
 * still names it; takes the digest's lock, so it waits for a build or pull
 * of that digest to finish recording.  A running VM keeps its open image. */
int sbx_store_delete_unused(const char *root, const char *digest, sbx_error_t *err);

#endif
