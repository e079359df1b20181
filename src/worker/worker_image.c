#include "worker/worker_image.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/scodes.h"
#include "image/image_pull.h"
#include "image/image_ref.h"

int worker_image_ensure(const struct sbx_config *cfg, const char *name, const char *what, const char *bad_scode,
			struct worker_image *out, sbx_error_t *err)
{
	memset(out, 0, sizeof(*out));
	const char *ref_text = sbx_image_catalog_ref(&cfg->images, name);
	if (ref_text == NULL)
		ref_text = name;
	struct sbx_image_ref ref;
	char canonical[2 * SBX_REF_NAME_MAX + 2];
	if (sbx_image_ref_parse(ref_text, &ref, err) < 0 || sbx_image_ref_format(&ref, canonical, sizeof(canonical)) < 0) {
		const char *why = *err != NULL ? sbx_error_msg(*err) : "too long";
		sbx_error_t bad = NULL;
		sbx_error_scode(&bad, bad_scode, "%s%s '%s' is neither a catalog image nor an OCI reference (%s)",
				strcmp(bad_scode, SBX_S_MANIFEST) == 0 ? "iii.worker.yaml: " : "", what, name, why);
		sbx_error_free(err);
		*err = bad;
		return -1;
	}
	out->erofs = sbx_image_ensure(name, canonical, &cfg->images, err);
	if (out->erofs == NULL)
		return -1;
	if (image_runtime_load(out->erofs, &out->rt, err) < 0) {
		sbx_error_prefix(err, "image %s", canonical);
		sbx_error_default_scode(err, SBX_S_TRANSIENT);
		worker_image_free(out);
		return -1;
	}
	out->ref = strdup(canonical);
	if (out->ref == NULL) {
		worker_image_free(out);
		return sbx_error_errno(err, ENOMEM, "worker image");
	}
	return 0;
}

void worker_image_free(struct worker_image *img)
{
	free(img->ref);
	free(img->erofs);
	image_runtime_free(&img->rt);
	memset(img, 0, sizeof(*img));
}
