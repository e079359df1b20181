/* `cp SRC ID:/path` (cmd_cp.c): a host file or tree sent into a sandbox. */
#ifndef SBX_CMD_CP_IN_H
#define SBX_CMD_CP_IN_H

#include "cmd/control_client.h"

/* Sends `src` to the guest path `guest` (a file, or a directory whole).
 * The tree is walked with descriptors: each entry is opened once without
 * following a link (O_PATH|O_NOFOLLOW), looked at with fstat, and read
 * through that descriptor, so a link or special file is skipped with a
 * warning even when it replaces a file or directory during the copy.
 * Returns a CLI_EXIT_* code after printing what failed. */
int cp_in(const struct cli_opts *o, const char *ref, const char *src, const char *guest);

#endif
