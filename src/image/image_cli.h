#ifndef SBX_IMAGE_CLI_H
#define SBX_IMAGE_CLI_H
/* `sandbox-libkrun image [--config FILE] pull|import|ls|rm ...`: the cache. */

#include "common/error.h"
#include "image/image_config.h"

/* What the adapter lends the command: src/image needs no adapter header.
 * `load` fills *out from a --config file (free with
 * sbx_image_config_free), or fails with a message for the operator.  The
 * file holds the adapter's whole configuration, and only the adapter's
 * parser knows all of it, so this command refuses exactly the files serve
 * would refuse.  `pulled` (NULL: none) runs after a successful pull or
 * import (`name`: what was pulled, the reference for an import) unless
 * --no-template was given: it makes the image's VM template, reports on
 * stderr and never fails the pull. */
struct sbx_image_cli_host {
	int (*load)(void *ud, const char *path, struct sbx_image_config *out, sbx_error_t *err);
	void (*pulled)(void *ud, const char *name, const char *ref);
	void *ud;
};

/* The command; a bad --config FILE exits 2, like serve on a bad config. */
int sbx_image_cli(int argc, char **argv, const struct sbx_image_cli_host *host);
#endif
