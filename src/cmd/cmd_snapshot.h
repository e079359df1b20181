/* `sandbox-libkrun snapshot ls|rm` (cmd_snapshot.c): the snapshots of
 * sandboxes the daemon keeps, over the control socket (docs/cli.md). */
#ifndef SBX_CMD_CMD_SNAPSHOT_H
#define SBX_CMD_CMD_SNAPSHOT_H

int sbx_cmd_snapshot(int argc, char **argv);

#endif
