/* The daemon's state directory: III_SANDBOX_STATE_DIR, else systemd's
 * $STATE_DIRECTORY (its first entry), else /var/lib/sandbox-libkrun for
 * root, else $XDG_STATE_HOME/sandbox-libkrun, else
 * ~/.local/state/sandbox-libkrun. */
#ifndef SBX_COMMON_STATE_DIR_H
#define SBX_COMMON_STATE_DIR_H

#include <sys/types.h>

#include "common/error.h"

#define SBX_SYSTEM_STATE_DIR "/var/lib/sandbox-libkrun"

/* Returns the path (malloc'd) after creating it and its parents (0700 for
 * the directories it creates). */
char *sbx_state_dir(sbx_error_t *err);

/* Returns "<state dir>/<sub>" (malloc'd), created 0700 if missing. */
char *sbx_state_subdir(const char *sub, sbx_error_t *err);

/* mkdir -p with `mode` for every component it creates. */
int sbx_mkdir_p(const char *path, mode_t mode, sbx_error_t *err);

#endif
