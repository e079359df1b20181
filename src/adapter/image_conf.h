/* The image store's view of the adapter configuration: config.c is the one
 * parser, and this builds struct sbx_image_config from its result. */
#ifndef SBX_ADAPTER_IMAGE_CONF_H
#define SBX_ADAPTER_IMAGE_CONF_H

#include "adapter/config.h"
#include "common/error.h"
#include "image/image_config.h"

/* Fills `out` (free with sbx_image_config_free) from `cfg`. */
int sbx_image_config_from(const struct sbx_config *cfg, struct sbx_image_config *out, sbx_error_t *err);

/* Reads a JSON config file with config.c's fail-closed parser. */
struct sbx_config *sbx_config_load_file(const char *path, sbx_error_t *err);

#endif
