/* The effective configuration as a JSON map, defaults filled in, for
 * `sandbox-libkrun config check`: every key sbx_config_parse() reads, with
 * the value the daemon would run with.  Built from the parsed struct, so a
 * new key is one more row here.  registry_auth passwords are never shown. */
#ifndef SBX_ADAPTER_CONFIG_PRINT_H
#define SBX_ADAPTER_CONFIG_PRINT_H

#include <jansson.h>

#include "adapter/config/config.h"

/* NULL (out of memory) with err set. */
json_t *sbx_config_to_json(const struct sbx_config *cfg, sbx_error_t *err);

#endif
