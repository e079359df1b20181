/* `sandbox-libkrun run`: the `run` operation without an engine. */
#ifndef SBX_CMD_RUN_H
#define SBX_CMD_RUN_H

int sbx_cmd_run(int argc, char **argv);

#endif
