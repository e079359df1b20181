#ifndef SBX_CMD_SERVE_H
#define SBX_CMD_SERVE_H
/* `sandbox-libkrun serve`: the iii worker daemon. */
int sbx_cmd_serve(int argc, char **argv);
#endif
