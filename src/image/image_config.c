#include "image/image_config.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sbx_image_config_init(struct sbx_image_config *c)
{
	memset(c, 0, sizeof(*c));
	c->auto_install = true;
}

static char *dup_string(json_t *v, const char *what, sbx_error_t *err)
{
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v)) {
		sbx_error_set(err, 0, "config: %s must be a string", what);
		return NULL;
	}
	char *s = strdup(json_string_value(v));
	if (s == NULL)
		sbx_error_errno(err, ENOMEM, "config");
	return s;
}

static int read_mirrors(struct sbx_image_config *c, json_t *obj, sbx_error_t *err)
{
	if (!json_is_object(obj))
		return sbx_error_set(err, 0, "config: registry_mirrors must be a map of registry host to base URL");
	c->mirrors = calloc(json_object_size(obj) + 1, sizeof(*c->mirrors));
	if (c->mirrors == NULL)
		return sbx_error_errno(err, ENOMEM, "config");
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v) {
		struct sbx_registry_mirror *m = &c->mirrors[c->n_mirrors];
		if ((m->host = strdup(key)) == NULL)
			return sbx_error_errno(err, ENOMEM, "config");
		c->n_mirrors++;
		if ((m->url = dup_string(v, "a registry_mirrors value", err)) == NULL)
			return -1;
	}
	return 0;
}

static int read_creds(struct sbx_image_config *c, json_t *obj, sbx_error_t *err)
{
	if (!json_is_object(obj))
		return sbx_error_set(err, 0, "config: registry_auth must be a map of host to {username, password}");
	c->creds = calloc(json_object_size(obj) + 1, sizeof(*c->creds));
	if (c->creds == NULL)
		return sbx_error_errno(err, ENOMEM, "config");
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v) {
		struct sbx_registry_cred *r = &c->creds[c->n_creds];
		if ((r->host = strdup(key)) == NULL)
			return sbx_error_errno(err, ENOMEM, "config");
		c->n_creds++;
		if (!json_is_object(v))
			return sbx_error_set(err, 0, "config: registry_auth['%s'] must be {username, password}", key);
		/* Never echo the values: they may be secrets. */
		if ((r->username = dup_string(json_object_get(v, "username"), "registry_auth username", err)) == NULL ||
		    (r->password = dup_string(json_object_get(v, "password"), "registry_auth password", err)) == NULL)
			return -1;
	}
	return 0;
}

static int read_custom(struct sbx_image_config *c, json_t *obj, sbx_error_t *err)
{
	if (!json_is_object(obj))
		return sbx_error_set(err, 0, "config: custom_images must be a map of name to OCI ref");
	size_t n = json_object_size(obj);
	c->custom_names = calloc(n + 1, sizeof(char *));
	c->custom_refs = calloc(n + 1, sizeof(char *));
	if (c->custom_names == NULL || c->custom_refs == NULL)
		return sbx_error_errno(err, ENOMEM, "config");
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v) {
		if ((c->custom_names[c->n_custom] = strdup(key)) == NULL)
			return sbx_error_errno(err, ENOMEM, "config");
		c->n_custom++;
		if ((c->custom_refs[c->n_custom - 1] = dup_string(v, "a custom_images value", err)) == NULL)
			return -1;
	}
	return 0;
}

int sbx_image_config_from_json(struct sbx_image_config *c, const char *json, size_t len, sbx_error_t *err)
{
	json_error_t jerr;
	json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL)
		return sbx_error_set(err, 0, "config: invalid JSON at line %d: %s", jerr.line, jerr.text);
	json_t *map = root;
	if (json_is_array(root) && json_array_size(root) == 1)
		map = json_array_get(root, 0);
	int rc = 0;
	if (!json_is_object(map)) {
		rc = sbx_error_set(err, 0, "config: expected a map (or a one-element list holding one)");
		goto out;
	}
	json_t *v = json_object_get(map, "auto_install");
	if (v != NULL) {
		if (!json_is_boolean(v)) {
			rc = sbx_error_set(err, 0, "config: auto_install must be a boolean");
			goto out;
		}
		c->auto_install = json_is_true(v);
	}
	if ((v = json_object_get(map, "registry_mirrors")) != NULL && (rc = read_mirrors(c, v, err)) < 0)
		goto out;
	if ((v = json_object_get(map, "registry_auth")) != NULL && (rc = read_creds(c, v, err)) < 0)
		goto out;
	if ((v = json_object_get(map, "custom_images")) != NULL)
		rc = read_custom(c, v, err);
out:
	json_decref(root);
	return rc;
}

int sbx_image_config_load(struct sbx_image_config *c, const char *path, sbx_error_t *err)
{
	FILE *f = fopen(path, "re");
	if (f == NULL)
		return sbx_error_errno(err, errno, "config '%s'", path);
	char *buf = NULL;
	size_t cap = 0, len = 0;
	int rc = 0;
	for (;;) {
		if (len == cap) {
			if (cap >= (1u << 20)) {
				rc = sbx_error_set(err, 0, "config '%s': larger than 1 MiB", path);
				break;
			}
			cap = cap ? cap * 2 : 4096;
			char *nb = realloc(buf, cap);
			if (nb == NULL) {
				rc = sbx_error_errno(err, ENOMEM, "config");
				break;
			}
			buf = nb;
		}
		size_t n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0) {
			if (ferror(f))
				rc = sbx_error_errno(err, EIO, "config '%s'", path);
			break;
		}
	}
	fclose(f);
	if (rc == 0 && sbx_image_config_from_json(c, buf, len, err) < 0)
		rc = sbx_error_prefix(err, "%s", path);
	free(buf);
	return rc;
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
		free(c->custom_names[i]);
		free(c->custom_refs[i]);
	}
	free(c->mirrors);
	free(c->creds);
	free(c->custom_names);
	free(c->custom_refs);
	sbx_image_config_init(c);
}

const char *sbx_image_config_mirror(const struct sbx_image_config *c, const char *host)
{
	for (size_t i = 0; i < c->n_mirrors; i++)
		if (strcmp(c->mirrors[i].host, host) == 0)
			return c->mirrors[i].url;
	return NULL;
}

const struct sbx_registry_cred *sbx_image_config_cred(const struct sbx_image_config *c, const char *host)
{
	for (size_t i = 0; i < c->n_creds; i++)
		if (strcmp(c->creds[i].host, host) == 0)
			return &c->creds[i];
	return NULL;
}

const char *sbx_image_catalog_ref(const struct sbx_image_config *c, const char *name)
{
	/* contract §5.1: presets win over custom_images */
	if (strcmp(name, "python") == 0)
		return "docker.io/iiidev/python:latest";
	if (strcmp(name, "node") == 0)
		return "docker.io/iiidev/node:latest";
	for (size_t i = 0; i < c->n_custom; i++)
		if (strcmp(c->custom_names[i], name) == 0)
			return c->custom_refs[i];
	return NULL;
}
