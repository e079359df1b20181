/* Which cached image a name given on the command line means: a catalog
 * name (its reference), a reference, a digest, or a digest's first hex
 * digits as `image ls` shows them (sha256:<12 hex>; at least 12). */
#ifndef SBX_IMAGE_LOOKUP_H
#define SBX_IMAGE_LOOKUP_H

#include "common/error.h"
#include "image/image_config.h"
#include "image/image_index.h"

#define SBX_DIGEST_PREFIX_MIN 12 /* hex digits of a short digest */

/* The entry of idx `name` names, or NULL with a message naming `name`
 * (no such image, or a short digest matching several). */
const struct sbx_index_entry *sbx_image_lookup(const struct sbx_index *idx, const struct sbx_image_config *cfg,
					       const char *name, sbx_error_t *err);

#endif
