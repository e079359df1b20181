/* `sandbox-libkrun image`: the image store's command (src/image/image_cli.c)
 * reading --config FILE with the adapter's loader (adapter/config_file.h). */
#ifndef SBX_ADAPTER_IMAGE_CONF_H
#define SBX_ADAPTER_IMAGE_CONF_H

int sbx_cmd_image(int argc, char **argv);

#endif
