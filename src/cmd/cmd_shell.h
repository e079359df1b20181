/* `sandbox-libkrun shell` (cmd_shell.c): an operator command over the
 * control socket (docs/cli.md). */
#ifndef SBX_CMD_CMD_SHELL_H
#define SBX_CMD_CMD_SHELL_H

int sbx_cmd_shell(int argc, char **argv);

#endif
