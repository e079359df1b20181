/* `image import`: the air-gapped path.  Loads an OCI image layout directory
 * or a `docker save` archive (which holds an OCI layout, or the older
 * manifest.json form) into the store, verifying every blob. */
#ifndef SBX_IMAGE_IMPORT_H
#define SBX_IMAGE_IMPORT_H

#include "common/error.h"
#include "image/image_pull.h"

/* ref names the image in the index; NULL takes the archive's own tag
 * (docker save's RepoTags).  Images from the older docker save form are
 * stored by their config digest (Docker's image id): they have no manifest.
 * An archive's outer tar is unpacked within limits, as a layer is, and may
 * hold only regular files, directories and links. */
int sbx_image_import(const char *path, const char *ref, const struct sbx_image_limits *limits,
		     struct sbx_image_info *out, sbx_error_t *err);

#endif
