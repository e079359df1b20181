#ifndef SBX_CMD_CONFIG_H
#define SBX_CMD_CONFIG_H
/* `sandbox-libkrun config check FILE`: validates a configuration file as
 * serve would, prints its warnings and the effective configuration. */
int sbx_cmd_config(int argc, char **argv);
#endif
