/* `sandbox-libkrun ps` (cmd_ps.c): an operator command over the control
 * socket (docs/cli.md). */
#ifndef SBX_CMD_CMD_PS_H
#define SBX_CMD_CMD_PS_H

int sbx_cmd_ps(int argc, char **argv);

#endif
