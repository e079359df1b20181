#include "cmd/cmd_image.h"

#include <stdio.h>
#include <string.h>

#include "adapter/config/config_file.h"
#include "cmd/image_template.h"
#include "image/image_cli.h"
#include "vm/template_cache.h"

/* The whole configuration of --config (NULL: the defaults), for the
 * template a pull makes. */
struct image_conf {
	struct sbx_config *cfg;
};

static int load(void *ud, const char *path, struct sbx_image_config *out, sbx_error_t *err)
{
	struct image_conf *ic = ud;
	struct sbx_config *cfg = sbx_config_load_any(path, err);
	if (cfg == NULL)
		return -1;
	/* Hand the image keys over; the rest stays for the template. */
	*out = cfg->images;
	sbx_image_config_init(&cfg->images);
	sbx_config_free(ic->cfg);
	ic->cfg = cfg;
	return 0;
}

static void pulled(void *ud, const char *name, const char *ref)
{
	struct image_conf *ic = ud;
	sbx_error_t err = NULL;
	if (ic->cfg == NULL && (ic->cfg = sbx_config_defaults(&err)) == NULL) {
		fprintf(stderr, "sandbox-libkrun image: the template of %s was not made: %s\n", name,
			sbx_error_msg(err));
		sbx_error_free(&err);
		return;
	}
	image_template_make(ic->cfg, name, ref);
}

int sbx_cmd_image(int argc, char **argv)
{
	struct image_conf ic = { NULL };
	const struct sbx_image_cli_host host = { load, pulled, &ic };
	int rc = sbx_image_cli(argc, argv, &host);
	sbx_config_free(ic.cfg);
	/* A removed image's templates can no longer match: they go with it. */
	for (int i = 1; rc == 0 && i < argc; i++) {
		if (strcmp(argv[i], "--config") == 0 || strcmp(argv[i], "--ref") == 0) {
			i++;
			continue;
		}
		if (argv[i][0] != '-') {
			if (strcmp(argv[i], "rm") == 0)
				template_cache_sweep();
			break;
		}
	}
	return rc;
}
