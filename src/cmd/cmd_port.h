/* `sandbox-libkrun port` (cmd_port.c): a sandbox's published ports over the
 * control socket (docs/cli.md). */
#ifndef SBX_CMD_CMD_PORT_H
#define SBX_CMD_CMD_PORT_H

int sbx_cmd_port(int argc, char **argv);

#endif
