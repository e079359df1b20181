/* The adapter configuration keys the image store uses.  The adapter parses
 * its own config; the CLI builds this from --config FILE. */
#ifndef SBX_IMAGE_CONFIG_H
#define SBX_IMAGE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

struct sbx_registry_mirror {
	char *host; /* registry host as written in refs: "docker.io", "ghcr.io" */
	char *url;  /* base URL serving the v2 API: "https://mirror.example", "http://127.0.0.1:5000" */
};

struct sbx_registry_cred {
	char *host; /* host[:port] the requests go to */
	char *username, *password; /* literal, or "${VAR}" read from the environment when used */
};

struct sbx_image_config {
	bool auto_install;
	struct sbx_registry_mirror *mirrors;
	size_t n_mirrors;
	struct sbx_registry_cred *creds;
	size_t n_creds;
	/* custom_images, so the CLI can pull catalog names */
	char **custom_names, **custom_refs;
	size_t n_custom;
};

/* Defaults: auto_install true, no mirrors, no credentials. */
void sbx_image_config_init(struct sbx_image_config *c);
/* Reads the keys from a JSON object (a flat map, or a one-element list
 * holding one); other keys are ignored, wrong types are errors. */
int sbx_image_config_from_json(struct sbx_image_config *c, const char *json, size_t len, sbx_error_t *err);
int sbx_image_config_load(struct sbx_image_config *c, const char *path, sbx_error_t *err);
void sbx_image_config_free(struct sbx_image_config *c);

/* The mirror base URL for a registry host, or NULL. */
const char *sbx_image_config_mirror(const struct sbx_image_config *c, const char *host);
/* The credentials for a host[:port], or NULL. */
const struct sbx_registry_cred *sbx_image_config_cred(const struct sbx_image_config *c, const char *host);
/* OCI ref of a catalog name: the presets python and node, then custom_images.
 * NULL when the name is not in the catalog. */
const char *sbx_image_catalog_ref(const struct sbx_image_config *c, const char *name);

#endif
