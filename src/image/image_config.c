#include "image/image_config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/nearest.h"

static const struct sbx_image_preset presets[] = {
	{ "python", "docker.io/iiidev/python:latest" },
	{ "node", "docker.io/iiidev/node:latest" },
};

void sbx_image_config_init(struct sbx_image_config *c)
{
	memset(c, 0, sizeof(*c));
	c->auto_install = true;
	c->limits = (struct sbx_image_limits){
		.max_entries = SBX_IMAGE_MAX_ENTRIES_DEFAULT,
		.max_bytes = SBX_IMAGE_MAX_MB_DEFAULT << 20,
		.max_blob_bytes = SBX_IMAGE_MAX_BLOB_MB_DEFAULT << 20,
	};
}

const char *sbx_config_json_kind(json_t *v)
{
	if (v == NULL)
		return "nothing (the key is missing)";
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "a map";
	case JSON_ARRAY: return "a list";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number with a fraction";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	default: return "null";
	}
}

int sbx_config_type_error(sbx_error_t *err, const char *key, const char *expected, json_t *v)
{
	return sbx_error_set(err, EINVAL, "config key `%s`: expected %s, got %s", key, expected,
			     sbx_config_json_kind(v));
}

int sbx_config_dup_string(json_t *v, const char *key, char **out, sbx_error_t *err)
{
	if (!json_is_string(v))
		return sbx_config_type_error(err, key, "a string", v);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return sbx_error_set(err, EINVAL, "config key `%s`: the string holds a NUL byte", key);
	*out = strdup(json_string_value(v));
	if (*out == NULL)
		return sbx_error_errno(err, ENOMEM, "config");
	return 0;
}

/* A string entry of map `key`; messages name it "KEY.ENTRY" (the entry is
 * a host or an image name, never a secret). */
static int entry_string(json_t *v, const char *key, const char *entry, char **out, sbx_error_t *err)
{
	if (!json_is_string(v))
		return sbx_error_set(err, EINVAL, "config key `%s.%s`: expected a string, got %s", key, entry,
				     sbx_config_json_kind(v));
	if (sbx_config_dup_string(v, key, out, err) < 0)
		return sbx_error_prefix(err, "entry '%s'", entry);
	return 0;
}

static int parse_mirrors(struct sbx_image_config *c, const char *key, json_t *v, sbx_error_t *err)
{
	if (!json_is_object(v))
		return sbx_config_type_error(err, "registry_mirrors", "a map of strings", v);
	c->mirrors = calloc(json_object_size(v) + 1, sizeof(*c->mirrors));
	if (c->mirrors == NULL)
		return sbx_error_errno(err, ENOMEM, "config");
	const char *k;
	json_t *item;
	json_object_foreach(v, k, item) {
		struct sbx_oci_registry_mirror *m = &c->mirrors[c->n_mirrors++];
		if ((m->host = strdup(k)) == NULL)
			return sbx_error_errno(err, ENOMEM, "config");
		if (entry_string(item, "registry_mirrors", k, &m->url, err) < 0)
			return -1;
	}
	return 0;
}

static const char *const cred_fields[] = { "username", "password" };

static int parse_creds(struct sbx_image_config *c, const char *key, json_t *v, sbx_error_t *err)
{
	if (!json_is_object(v))
		return sbx_config_type_error(err, "registry_auth", "a map of {username, password}", v);
	c->creds = calloc(json_object_size(v) + 1, sizeof(*c->creds));
	if (c->creds == NULL)
		return sbx_error_errno(err, ENOMEM, "config");
	const char *k;
	json_t *item;
	json_object_foreach(v, k, item) {
		struct sbx_oci_registry_cred *r = &c->creds[c->n_creds++];
		if (!json_is_object(item))
			return sbx_error_set(err, EINVAL, "config key `registry_auth.%s`: expected a map, got %s", k,
					     sbx_config_json_kind(item));
		if ((r->host = strdup(k)) == NULL)
			return sbx_error_errno(err, ENOMEM, "config");
		sbx_warn_unknown_fields("registry_auth", k, item, cred_fields, 2);
		/* Never echo the values: they are credentials. */
		if (sbx_config_dup_string(json_object_get(item, cred_fields[0]), "registry_auth.*.username",
					  &r->username, err) < 0 ||
		    sbx_config_dup_string(json_object_get(item, cred_fields[1]), "registry_auth.*.password",
					  &r->password, err) < 0)
			return sbx_error_prefix(err, "registry '%s'", k);
	}
	return 0;
}

static int cmp_custom(const void *a, const void *b)
{
	return strcmp(((const struct sbx_custom_image *)a)->name, ((const struct sbx_custom_image *)b)->name);
}

static int parse_custom(struct sbx_image_config *c, const char *key, json_t *v, sbx_error_t *err)
{
	if (!json_is_object(v))
		return sbx_config_type_error(err, "custom_images", "a map of strings", v);
	c->custom = calloc(json_object_size(v) + 1, sizeof(*c->custom));
	if (c->custom == NULL)
		return sbx_error_errno(err, ENOMEM, "config");
	const char *k;
	json_t *item;
	json_object_foreach(v, k, item) {
		struct sbx_custom_image *e = &c->custom[c->n_custom++];
		if ((e->name = strdup(k)) == NULL)
			return sbx_error_errno(err, ENOMEM, "config");
		if (entry_string(item, "custom_images", k, &e->ref, err) < 0)
			return -1;
		if (k[0] == '\0')
			return sbx_error_set(err, EINVAL, "custom_images key must not be empty");
		if (sbx_image_preset_ref(k) != NULL)
			return sbx_error_set(err, EINVAL,
					     "custom_images key '%s' shadows a built-in preset — rename it (presets: "
					     "python, node)",
					     k);
	}
	/* Sorted, so that listings are stable (catalog::list relies on it). */
	qsort(c->custom, c->n_custom, sizeof(*c->custom), cmp_custom);
	return 0;
}

/* An integer of 1..max for key; MiB keys stay far below 2^64 bytes. */
static int parse_count(json_t *v, const char *key, uint64_t max, uint64_t *out, sbx_error_t *err)
{
	if (!json_is_integer(v))
		return sbx_config_type_error(err, key, "an integer", v);
	json_int_t n = json_integer_value(v);
	if (n < 1 || (uint64_t)n > max)
		return sbx_error_set(err, EINVAL, "config key `%s`: must be 1..%llu, got %lld", key,
				     (unsigned long long)max, (long long)n);
	*out = (uint64_t)n;
	return 0;
}

static int parse_max_entries(struct sbx_image_config *c, const char *key, json_t *v, sbx_error_t *err)
{
	return parse_count(v, key, UINT32_MAX, &c->limits.max_entries, err);
}

/* MiB limits: 1 PiB at most, far below 2^64 bytes. */
static int parse_mib(json_t *v, const char *key, uint64_t *bytes, sbx_error_t *err)
{
	uint64_t n = 0;
	if (parse_count(v, key, 1ull << 30, &n, err) < 0)
		return -1;
	*bytes = n << 20;
	return 0;
}

static int parse_max_mb(struct sbx_image_config *c, const char *key, json_t *v, sbx_error_t *err)
{
	return parse_mib(v, key, &c->limits.max_bytes, err);
}

static int parse_max_blob_mb(struct sbx_image_config *c, const char *key, json_t *v, sbx_error_t *err)
{
	return parse_mib(v, key, &c->limits.max_blob_bytes, err);
}

static int parse_auto_install(struct sbx_image_config *c, const char *key, json_t *v, sbx_error_t *err)
{
	if (!json_is_boolean(v))
		return sbx_config_type_error(err, key, "a boolean", v);
	c->auto_install = json_is_true(v);
	return 0;
}

/* The image store's keys: the one list its parser reads. */
static const struct {
	const char *name;
	int (*parse)(struct sbx_image_config *c, const char *key, json_t *v, sbx_error_t *err);
} image_keys[] = {
	{ "auto_install", parse_auto_install },
	{ "registry_mirrors", parse_mirrors },
	{ "registry_auth", parse_creds },
	{ "custom_images", parse_custom },
	{ "image_max_entries", parse_max_entries },
	{ "image_max_mb", parse_max_mb },
	{ "image_max_blob_mb", parse_max_blob_mb },
};

const char *sbx_image_config_key(size_t i)
{
	return i < sizeof(image_keys) / sizeof(image_keys[0]) ? image_keys[i].name : NULL;
}

int sbx_image_config_parse_key(struct sbx_image_config *c, const char *key, json_t *v, sbx_error_t *err)
{
	for (size_t i = 0; i < sizeof(image_keys) / sizeof(image_keys[0]); i++)
		if (strcmp(key, image_keys[i].name) == 0)
			return image_keys[i].parse(c, key, v, err) < 0 ? -1 : 1;
	return 0;
}

void sbx_image_config_free(struct sbx_image_config *c)
{
	for (size_t i = 0; i < c->n_mirrors; i++) {
		free(c->mirrors[i].host);
		free(c->mirrors[i].url);
	}
	for (size_t i = 0; i < c->n_creds; i++) {
		free(c->creds[i].host);
		free(c->creds[i].username);
		free(c->creds[i].password);
	}
	for (size_t i = 0; i < c->n_custom; i++) {
		free(c->custom[i].name);
		free(c->custom[i].ref);
	}
	free(c->mirrors);
	free(c->creds);
	free(c->custom);
	sbx_image_config_init(c);
}

const char *sbx_image_config_mirror(const struct sbx_image_config *c, const char *host)
{
	for (size_t i = 0; i < c->n_mirrors; i++)
		if (strcmp(c->mirrors[i].host, host) == 0)
			return c->mirrors[i].url;
	return NULL;
}

const struct sbx_oci_registry_cred *sbx_image_config_cred(const struct sbx_image_config *c, const char *host)
{
	for (size_t i = 0; i < c->n_creds; i++)
		if (strcmp(c->creds[i].host, host) == 0)
			return &c->creds[i];
	return NULL;
}

const struct sbx_image_preset *sbx_image_presets(size_t *n)
{
	*n = sizeof(presets) / sizeof(presets[0]);
	return presets;
}

const char *sbx_image_preset_ref(const char *name)
{
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
		if (strcmp(presets[i].name, name) == 0)
			return presets[i].ref;
	return NULL;
}

const char *sbx_image_catalog_ref(const struct sbx_image_config *c, const char *name)
{
	/* contract §5.1: presets win over custom_images */
	const char *ref = sbx_image_preset_ref(name);
	for (size_t i = 0; ref == NULL && i < c->n_custom; i++)
		if (strcmp(c->custom[i].name, name) == 0)
			ref = c->custom[i].ref;
	return ref;
}
