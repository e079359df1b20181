/* `sandbox-libkrun stop` (cmd_stop.c): an operator command over the control
 * socket (docs/cli.md). */
#ifndef SBX_CMD_CMD_STOP_H
#define SBX_CMD_CMD_STOP_H

int sbx_cmd_stop(int argc, char **argv);

#endif
