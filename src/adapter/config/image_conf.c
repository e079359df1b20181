#include "adapter/config/image_conf.h"

#include <string.h>

#include "adapter/config/config_file.h"
#include "image/image_cli.h"
#include "vm/template_cache.h"

static int load(const char *path, struct sbx_image_config *out, sbx_error_t *err)
{
	struct sbx_config *cfg = sbx_config_load_file(path, err);
	if (cfg == NULL)
		return -1;
	/* Hand the image keys over; the command needs nothing else. */
	*out = cfg->images;
	sbx_image_config_init(&cfg->images);
	sbx_config_free(cfg);
	return 0;
}

int sbx_cmd_image(int argc, char **argv)
{
	int rc = sbx_image_cli(argc, argv, load);
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
