/* The configuration keys the image store uses (auto_install,
 * registry_mirrors, registry_auth, custom_images, image_max_entries,
 * image_max_mb, image_max_blob_mb) and their parsers.
 *
 * Why the parsers live here and not in the adapter: src/image must not see
 * the adapter, but the adapter may use src/image.  So the one parser of each
 * of these keys is here, and the adapter's config.c (the parser of the whole
 * configuration, fail-closed) calls sbx_image_config_parse_key() for them
 * and keeps the result in its struct sbx_config.  The error wording helpers
 * below are shared for the same reason: every key fails with one style. */
#ifndef SBX_IMAGE_CONFIG_H
#define SBX_IMAGE_CONFIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

struct sbx_oci_registry_mirror {
	char *host; /* registry host as written in refs: "docker.io", "ghcr.io" */
	char *url;  /* base URL serving the v2 API: "https://mirror.example", "http://127.0.0.1:5000" */
};

struct sbx_oci_registry_cred {
	char *host; /* host[:port] the requests go to */
	char *username, *password; /* literal, or "${VAR}" read from the environment when used */
};

struct sbx_custom_image {
	char *name; /* catalog name, never empty nor a preset's */
	char *ref;  /* OCI ref */
};

/* What one image may cost to build (docs/security.md, "Hostile layers"). */
#define SBX_IMAGE_MAX_ENTRIES_DEFAULT 1000000ull
#define SBX_IMAGE_MAX_MB_DEFAULT 32768ull
#define SBX_IMAGE_MAX_BLOB_MB_DEFAULT 16384ull

struct sbx_image_limits {
	uint64_t max_entries;    /* entries of all layers together */
	uint64_t max_bytes;      /* what they are charged, all layers together */
	uint64_t max_blob_bytes; /* one layer blob as downloaded or imported */
};

struct sbx_image_config {
	bool auto_install;
	struct sbx_image_limits limits;
	struct sbx_oci_registry_mirror *mirrors;
	size_t n_mirrors;
	struct sbx_oci_registry_cred *creds;
	size_t n_creds;
	struct sbx_custom_image *custom; /* sorted by name (byte order) */
	size_t n_custom;
};

/* Defaults: auto_install true, no mirrors, no credentials, no custom
 * images, the SBX_IMAGE_*_DEFAULT limits. */
void sbx_image_config_init(struct sbx_image_config *c);
/* Parses `v` as the value of configuration key `key` when it is one of the
 * image store's keys: returns 1 when it was, 0 when `key` is not one of them
 * (nothing is read), -1 with a message naming the key on a bad value.  Each
 * key once per `c` (as in a JSON map).  On -1 `c` may hold part of the
 * value: sbx_image_config_free() releases it. */
int sbx_image_config_parse_key(struct sbx_image_config *c, const char *key, json_t *v, sbx_error_t *err);
/* The name of the image store's i-th key, NULL past the last. */
const char *sbx_image_config_key(size_t i);
void sbx_image_config_free(struct sbx_image_config *c);

/* The mirror base URL for a registry host, or NULL. */
const char *sbx_image_config_mirror(const struct sbx_image_config *c, const char *host);
/* The credentials for a host[:port], or NULL. */
const struct sbx_oci_registry_cred *sbx_image_config_cred(const struct sbx_image_config *c, const char *host);
struct sbx_image_preset {
	const char *name, *ref;
};
/* The built-in presets (contract §5.1) in catalog order; *n gets their count. */
const struct sbx_image_preset *sbx_image_presets(size_t *n);
/* The OCI ref of a built-in preset, or NULL. */
const char *sbx_image_preset_ref(const char *name);
/* OCI ref of a catalog name: the presets, then custom_images.  NULL when the
 * name is not in the catalog. */
const char *sbx_image_catalog_ref(const struct sbx_image_config *c, const char *name);

/* "a map", "an integer", ... for messages; "nothing (the key is missing)"
 * for NULL. */
const char *sbx_config_json_kind(json_t *v);
/* Fails with "config key `KEY`: expected EXPECTED, got <kind of v>". */
int sbx_config_type_error(sbx_error_t *err, const char *key, const char *expected, json_t *v);
/* A copy of a JSON string value; a non-string, or a string holding a NUL
 * byte (which C would silently cut), is a type error for `key`. */
int sbx_config_dup_string(json_t *v, const char *key, char **out, sbx_error_t *err);

#endif
