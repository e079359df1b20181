/* `sandbox-libkrun cp` (cmd_cp.c): an operator command over the control
 * socket (docs/cli.md). */
#ifndef SBX_CMD_CMD_CP_H
#define SBX_CMD_CMD_CP_H

int sbx_cmd_cp(int argc, char **argv);

#endif
