/* `sandbox-libkrun logs` (cmd_logs.c): an operator command over the control
 * socket (docs/cli.md). */
#ifndef SBX_CMD_CMD_LOGS_H
#define SBX_CMD_CMD_LOGS_H

int sbx_cmd_logs(int argc, char **argv);

#endif
