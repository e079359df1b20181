#ifndef SBX_IMAGE_CLI_H
#define SBX_IMAGE_CLI_H
/* `sandbox-libkrun image [--config FILE] pull|import|ls|rm ...`: the cache. */

#include "common/error.h"
#include "image/image_config.h"

/* Fills *out from a --config file (free with sbx_image_config_free), or
 * fails with a message for the operator.  The file holds the adapter's whole
 * configuration, and only the adapter's parser knows all of it: the adapter
 * passes its loader in, so that this command refuses exactly the files
 * serve would refuse, and src/image needs no adapter header. */
typedef int (*sbx_image_config_loader)(const char *path, struct sbx_image_config *out, sbx_error_t *err);

/* The command; a bad --config FILE exits 2, like serve on a bad config. */
int sbx_image_cli(int argc, char **argv, sbx_image_config_loader load);
#endif
