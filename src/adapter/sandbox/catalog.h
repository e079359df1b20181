/* The image catalog (contract §5): the two presets, then the operator's
 * custom_images; and the check `create` and `run` make before anything
 * else touches an image. */
#ifndef SBX_ADAPTER_CATALOG_H
#define SBX_ADAPTER_CATALOG_H

#include <jansson.h>

#include "adapter/config/config.h"
#include "common/error.h"

/* {images: [{name, oci_ref, kind}]}: presets in fixed order, then custom
 * images sorted by name. */
json_t *sbx_catalog_list(const struct sbx_config *cfg);
/* The OCI ref of a bootable image: known (presets win over custom images)
 * and allow-listed; S100 otherwise. */
const char *sbx_catalog_resolve(const struct sbx_config *cfg, const char *image, sbx_error_t *err);

#endif
