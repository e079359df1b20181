/* `sandbox-libkrun run`: the `run` operation without an engine. */
#ifndef SBX_ADAPTER_RUN_CLI_H
#define SBX_ADAPTER_RUN_CLI_H

int sbx_cmd_run(int argc, char **argv);

#endif
