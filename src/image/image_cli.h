#ifndef SBX_IMAGE_CLI_H
#define SBX_IMAGE_CLI_H
/* `sandbox-libkrun image pull|import|ls|rm [--config FILE] ...`: the cache. */
int sbx_cmd_image(int argc, char **argv);
#endif
