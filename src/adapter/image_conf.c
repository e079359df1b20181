#include "adapter/image_conf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int dup2s(const char *a, const char *b, char **da, char **db, sbx_error_t *err)
{
	*da = strdup(a);
	*db = strdup(b);
	if (*da == NULL || *db == NULL)
		return sbx_error_errno(err, ENOMEM, "image config");
	return 0;
}

static int fill(const struct sbx_config *cfg, struct sbx_image_config *out, sbx_error_t *err)
{
	out->auto_install = cfg->auto_install;
	out->mirrors = calloc(cfg->n_registry_mirrors + 1, sizeof(*out->mirrors));
	out->creds = calloc(cfg->n_registry_auth + 1, sizeof(*out->creds));
	out->custom_names = calloc(cfg->n_custom_images + 1, sizeof(char *));
	out->custom_refs = calloc(cfg->n_custom_images + 1, sizeof(char *));
	if (out->mirrors == NULL || out->creds == NULL || out->custom_names == NULL || out->custom_refs == NULL)
		return sbx_error_errno(err, ENOMEM, "image config");
	for (size_t i = 0; i < cfg->n_registry_mirrors; i++) {
		struct sbx_registry_mirror *m = &out->mirrors[out->n_mirrors++];
		if (dup2s(cfg->registry_mirrors[i].name, cfg->registry_mirrors[i].value, &m->host, &m->url, err) < 0)
			return -1;
	}
	for (size_t i = 0; i < cfg->n_registry_auth; i++) {
		const struct sbx_registry_auth *a = &cfg->registry_auth[i];
		struct sbx_registry_cred *c = &out->creds[out->n_creds++];
		if ((c->host = strdup(a->host)) == NULL ||
		    dup2s(a->username, a->password, &c->username, &c->password, err) < 0)
			return c->host == NULL ? sbx_error_errno(err, ENOMEM, "image config") : -1;
	}
	for (size_t i = 0; i < cfg->n_custom_images; i++) {
		size_t k = out->n_custom++;
		if (dup2s(cfg->custom_images[i].name, cfg->custom_images[i].value, &out->custom_names[k],
			  &out->custom_refs[k], err) < 0)
			return -1;
	}
	return 0;
}

int sbx_image_config_from(const struct sbx_config *cfg, struct sbx_image_config *out, sbx_error_t *err)
{
	sbx_image_config_init(out);
	if (fill(cfg, out, err) < 0) {
		sbx_image_config_free(out);
		return -1;
	}
	return 0;
}

struct sbx_config *sbx_config_load_file(const char *path, sbx_error_t *err)
{
	json_error_t jerr;
	json_t *v = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (v == NULL) {
		sbx_error_set(err, EINVAL, "%s: %s (line %d)", path, jerr.text, jerr.line);
		return NULL;
	}
	struct sbx_config *cfg = sbx_config_parse(v, err);
	json_decref(v);
	if (cfg == NULL)
		sbx_error_prefix(err, "%s", path);
	return cfg;
}
