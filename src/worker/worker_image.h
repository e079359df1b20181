/* A worker's base image: a catalog name (preset or custom_images; the
 * sandbox allowlist does not apply: Compose, holding the worker token,
 * chooses it) or an OCI reference, made present in the image store as
 * sandbox create does (auto_install; S101 when off and missing, S102 when
 * the pull fails), with what its OCI config says about Env, User and
 * WorkingDir. */
#ifndef SBX_WORKER_IMAGE_H
#define SBX_WORKER_IMAGE_H

#include "adapter/config/config.h"
#include "image/image_runtime.h"
#include "common/error.h"

struct worker_image {
	char *ref;   /* the canonical OCI reference pulled */
	char *erofs; /* the image in the store */
	struct image_runtime rt;
};

/* `what` names the field in messages ("runtime.base_image"); a name that
 * is neither in the catalog nor a reference fails with `bad_scode`. */
int worker_image_ensure(const struct sbx_config *cfg, const char *name, const char *what, const char *bad_scode,
			struct worker_image *out, sbx_error_t *err);
void worker_image_free(struct worker_image *img);

#endif
