/* `sandbox-libkrun exec` (cmd_exec.c): an operator command over the control
 * socket (docs/cli.md). */
#ifndef SBX_CMD_CMD_EXEC_H
#define SBX_CMD_CMD_EXEC_H

int sbx_cmd_exec(int argc, char **argv);

#endif
