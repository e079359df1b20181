/* Pulling an image from a registry into the store, and ensure(): the call
 * the sandbox code makes before it boots a VM. */
#ifndef SBX_IMAGE_PULL_H
#define SBX_IMAGE_PULL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "image/image_config.h"
#include "image/image_ref.h"
#include "image/image_store.h"

/* Progress of a pull, for a terminal: called as each layer downloads
 * (may be NULL); `log`: the pull's steps go to the log instead (a daemon's
 * pull, image/pull_log.h), while the CLI keeps stderr for its own output. */
struct sbx_pull_progress {
	void (*layer)(void *ud, size_t index, size_t count, const char *digest, uint64_t done, uint64_t total);
	void *ud;
	bool log;
};

struct sbx_image_info {
	char ref[2 * SBX_REF_NAME_MAX + 2]; /* canonical reference */
	char digest[SBX_DIGEST_LEN + 1];    /* manifest digest */
	uint64_t size;                      /* bytes of the erofs image */
	char *path;                         /* the erofs image; the caller frees it */
	int pulled;                         /* 0 when it was already stored */
};

/* Resolves ref at its registry (or mirror), downloads and verifies what is
 * missing, and records ref in the index. */
int sbx_image_pull(const char *ref, const struct sbx_image_config *cfg, const struct sbx_pull_progress *progress,
		   struct sbx_image_info *out, sbx_error_t *err);

/* The path of the erofs image for catalog image `name` with OCI ref `ref`;
 * the caller frees it.  A cache hit costs an index read.  On a miss:
 * auto_install false -> S101 naming the ref and the commands that fetch it;
 * pull or build failure (including no linux/<arch> manifest) -> S102. */
char *sbx_image_ensure(const char *name, const char *ref, const struct sbx_image_config *cfg, sbx_error_t *err);

/* Builds the image of digest from src (within limits) unless it is stored,
 * and records ref -> digest in the index, both under the digest's lock
 * (pull, import). */
int sbx_image_store(const char *root, const char *ref, const char *digest, const char *config, size_t config_len,
		    const struct sbx_layer_source *src, const struct sbx_image_limits *limits, struct sbx_image_info *out,
		    sbx_error_t *err);

#endif
