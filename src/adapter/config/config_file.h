/* The loaders of configuration files: `run --config FILE` and
 * `image --config FILE` read the engine configuration's keys from a JSON
 * file, `serve --config FILE` (the engine's spawn form) from a YAML one,
 * all with the same fail-closed parser as configuration::get
 * (adapter/config.h). */
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

#endif
