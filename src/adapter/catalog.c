#include "adapter/catalog.h"

#include <string.h>

static const struct {
	const char *name;
	const char *ref;
} presets[] = {
	{ "python", "docker.io/iiidev/python:latest" },
	{ "node", "docker.io/iiidev/node:latest" },
};

const char *sbx_catalog_preset_ref(const char *name)
{
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++) {
		if (strcmp(presets[i].name, name) == 0)
			return presets[i].ref;
	}
	return NULL;
}

static int append(json_t *images, const char *name, const char *ref, const char *kind)
{
	return json_array_append_new(images, json_pack("{s:s, s:s, s:s}", "name", name, "oci_ref", ref, "kind", kind));
}

json_t *sbx_catalog_list(const struct sbx_config *cfg)
{
	json_t *images = json_array();
	if (images == NULL)
		return NULL;
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++) {
		if (append(images, presets[i].name, presets[i].ref, "preset") < 0)
			goto fail;
	}
	/* The config keeps custom_images sorted by name. */
	for (size_t i = 0; i < cfg->n_custom_images; i++) {
		if (append(images, cfg->custom_images[i].name, cfg->custom_images[i].value, "custom") < 0)
			goto fail;
	}
	return json_pack("{s:o}", "images", images);
fail:
	json_decref(images);
	return NULL;
}

const char *sbx_catalog_resolve(const struct sbx_config *cfg, const char *image, sbx_error_t *err)
{
	const char *ref = sbx_catalog_preset_ref(image);
	if (ref == NULL)
		ref = sbx_config_custom_image(cfg, image);
	if (ref == NULL || !sbx_config_allows(cfg, image)) {
		sbx_error_scode(err, "S100",
				"image '%s' not in catalog; valid presets are 'python' and 'node', or add a custom image "
				"via worker config (see S100 docs)",
				image);
		return NULL;
	}
	return ref;
}
