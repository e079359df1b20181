#ifndef SBX_CMD_FRONT_H
#define SBX_CMD_FRONT_H

/* `sandbox-libkrun serve --front`: the door of a cluster (docs/cluster.md). */
int sbx_cmd_front(int argc, char **argv);

#endif
