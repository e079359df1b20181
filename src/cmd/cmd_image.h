/* `sandbox-libkrun image`: the image store's command (src/image/image_cli.c)
 * reading --config FILE with the adapter's loader (adapter/config/config_file.h). */
#ifndef SBX_CMD_IMAGE_H
#define SBX_CMD_IMAGE_H

int sbx_cmd_image(int argc, char **argv);

#endif
