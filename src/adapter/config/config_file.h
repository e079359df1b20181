/* The loaders of configuration files: `serve --config FILE` (the engine's
 * spawn form) reads the engine configuration's keys from a YAML file; `run`,
 * `image` and `config check` take YAML or JSON; all with the same
 * fail-closed parser as configuration::get (adapter/config.h). */
#ifndef SBX_ADAPTER_CONFIG_FILE_H
#define SBX_ADAPTER_CONFIG_FILE_H

#include "adapter/config/config.h"

/* At most this many bytes: a configuration, not a data set. */
#define SBX_CONFIG_FILE_MAX (1u << 20)

/* Reads `path` (duplicate keys refused) and parses it with
 * sbx_config_parse(); messages start with the path. */
struct sbx_config *sbx_config_load_file(const char *path, sbx_error_t *err);
/* The same for a YAML file (common/yaml_json.h: no aliases, no duplicate
 * keys); an empty file is the defaults. */
struct sbx_config *sbx_config_load_yaml_file(const char *path, sbx_error_t *err);
/* Either: a file whose first non-blank byte is '{' is read as JSON, any
 * other as YAML (of which JSON is a subset), so serve's file works for
 * every command. */
struct sbx_config *sbx_config_load_any(const char *path, sbx_error_t *err);

#endif
