/* `sandbox-libkrun image pull`'s last step: the pulled image's VM template
 * (adapter/vm_backend/template_warm.h's boot, with the configuration of
 * --config or the defaults), so that a daemon sharing the state directory
 * restores the image at its first `create` instead of booting it cold.
 * The VM's template build lock (vm/snapshot.h) keeps it from colliding
 * with a daemon building the same template. */
#ifndef SBX_CMD_IMAGE_TEMPLATE_H
#define SBX_CMD_IMAGE_TEMPLATE_H

#include "adapter/config/config.h"

/* Reports on stderr ("the template of python: saved in 2.9 s")
 * and warns when it cannot: the pull has succeeded either way. */
void image_template_make(const struct sbx_config *cfg, const char *name, const char *ref);

#endif
