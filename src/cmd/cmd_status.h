/* `sandbox-libkrun status` (cmd_status.c): an operator command over the control
 * socket (docs/cli.md). */
#ifndef SBX_CMD_CMD_STATUS_H
#define SBX_CMD_CMD_STATUS_H

int sbx_cmd_status(int argc, char **argv);

#endif
