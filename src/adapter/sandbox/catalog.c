#include "adapter/sandbox/catalog.h"

#include "common/scodes.h"

#include <string.h>

static int append(json_t *images, const char *name, const char *ref, const char *kind)
{
	return json_array_append_new(images, json_pack("{s:s, s:s, s:s}", "name", name, "oci_ref", ref, "kind", kind));
}

json_t *sbx_catalog_list(const struct sbx_config *cfg)
{
	json_t *images = json_array();
	if (images == NULL)
		return NULL;
	size_t n;
	const struct sbx_image_preset *presets = sbx_image_presets(&n);
	for (size_t i = 0; i < n; i++) {
		if (append(images, presets[i].name, presets[i].ref, "preset") < 0)
			goto fail;
	}
	/* The config keeps custom_images sorted by name. */
	for (size_t i = 0; i < cfg->images.n_custom; i++) {
		if (append(images, cfg->images.custom[i].name, cfg->images.custom[i].ref, "custom") < 0)
			goto fail;
	}
	return json_pack("{s:o}", "images", images);
fail:
	json_decref(images);
	return NULL;
}

const char *sbx_catalog_resolve(const struct sbx_config *cfg, const char *image, sbx_error_t *err)
{
	const char *ref = sbx_image_catalog_ref(&cfg->images, image);
	if (ref == NULL)
		return sbx_error_scode(err, SBX_S_IMAGE_UNKNOWN,
				       "image '%s' not in catalog; valid presets are 'python' and 'node', or add a custom "
				       "image via worker config (see S100 docs)",
				       image), NULL;
	/* In the catalog but not allowed: say so, and which case it is. */
	if (cfg->n_image_allowlist == 0)
		return sbx_error_scode(err, SBX_S_IMAGE_UNKNOWN,
				       "image '%s' not in image_allowlist: image_allowlist is empty: no image may be "
				       "created (add it to the configuration's image_allowlist)",
				       image), NULL;
	if (!sbx_config_allows(cfg, image))
		return sbx_error_scode(err, SBX_S_IMAGE_UNKNOWN,
				       "image '%s' not in image_allowlist (add it to the configuration's image_allowlist)",
				       image), NULL;
	return ref;
}
