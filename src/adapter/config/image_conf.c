#include "adapter/config/image_conf.h"

#include "adapter/config/config_file.h"
#include "image/image_cli.h"

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
	return sbx_image_cli(argc, argv, load);
}
