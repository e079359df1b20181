#include "adapter/config/config_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/yaml_json.h"

/* The whole file, NUL-terminated, refusing more than SBX_CONFIG_FILE_MAX
 * bytes before reading them all; *mode is the mode of the file read. */
static char *read_capped(const char *path, size_t *len, mode_t *mode, sbx_error_t *err)
{
	cleanup_file FILE *f = fopen(path, "re");
	if (f == NULL)
		return sbx_error_errno(err, errno, "%s", path), NULL;
	struct stat st;
	if (fstat(fileno(f), &st) < 0)
		return sbx_error_errno(err, errno, "%s", path), NULL;
	*mode = st.st_mode;
	char *buf = malloc(SBX_CONFIG_FILE_MAX + 1);
	if (buf == NULL)
		return sbx_error_errno(err, ENOMEM, "%s", path), NULL;
	/* One byte more than the cap tells a full file from an oversized one. */
	size_t n = fread(buf, 1, SBX_CONFIG_FILE_MAX + 1, f);
	if (ferror(f)) {
		free(buf);
		return sbx_error_errno(err, EIO, "%s", path), NULL;
	}
	if (n > SBX_CONFIG_FILE_MAX) {
		free(buf);
		return sbx_error_set(err, EFBIG, "%s: larger than %u bytes", path, SBX_CONFIG_FILE_MAX), NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* Registry credentials (or the names of the variables holding them) in a
 * file every user may read: said at each load, the file is still used. */
static struct sbx_config *warn_if_exposed(struct sbx_config *cfg, const char *path, mode_t mode)
{
	if (cfg != NULL && (mode & S_IROTH) != 0 && cfg->images.n_creds > 0)
		sbx_warn("config: %s holds registry_auth and every user may read it: make it 0600 (or 0640 with a "
			 "group of its own)",
			 path);
	return cfg;
}

struct sbx_config *sbx_config_load_file(const char *path, sbx_error_t *err)
{
	size_t len;
	mode_t mode;
	cleanup_free char *text = read_capped(path, &len, &mode, err);
	if (text == NULL)
		return NULL;
	json_error_t jerr;
	json_t *v = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
	if (v == NULL)
		return sbx_error_set(err, EINVAL, "%s: %s (line %d)", path, jerr.text, jerr.line), NULL;
	struct sbx_config *cfg = sbx_config_parse(v, err);
	json_decref(v);
	if (cfg == NULL)
		sbx_error_prefix(err, "%s", path);
	return warn_if_exposed(cfg, path, mode);
}

struct sbx_config *sbx_config_load_yaml_file(const char *path, sbx_error_t *err)
{
	size_t len;
	mode_t mode;
	cleanup_free char *text = read_capped(path, &len, &mode, err);
	if (text == NULL)
		return NULL;
	json_t *v = yaml_to_json(text, len, NULL, err);
	if (v == NULL)
		return sbx_error_prefix(err, "%s", path), NULL;
	struct sbx_config *cfg = sbx_config_parse(v, err);
	json_decref(v);
	if (cfg == NULL)
		sbx_error_prefix(err, "%s", path);
	return warn_if_exposed(cfg, path, mode);
}

struct sbx_config *sbx_config_load_any(const char *path, sbx_error_t *err)
{
	cleanup_file FILE *f = fopen(path, "re");
	int c = ' ';
	while (f != NULL && (c = fgetc(f)) != EOF && strchr(" \t\r\n", c) != NULL)
		;
	if (f == NULL || c == '{')
		return sbx_config_load_file(path, err);
	return sbx_config_load_yaml_file(path, err);
}
