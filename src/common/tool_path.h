/* Finding a host tool (mkfs.ext4, mkfs.erofs, qemu-system-x86_64, rm) the
 * daemon runs: in PATH, then in the sbin directories, which a `serve`
 * started by a user or a service manager often lacks in PATH. */
#ifndef SBX_COMMON_TOOL_PATH_H
#define SBX_COMMON_TOOL_PATH_H

#include "common/error.h"

/* Searched after PATH, in this order (NULL-terminated). */
extern const char *const sbx_tool_sbin_dirs[];

/* The absolute path of the executable `name` (malloc'd).  When none is
 * found, *err names the tool, the directories searched and, when known,
 * the Debian package that provides it. */
char *sbx_tool_find(const char *name, sbx_error_t *err);
/* The same over `path` (PATH's form; NULL: a default) and then `sbin`. */
char *sbx_tool_find_in(const char *name, const char *path, const char *const sbin[], sbx_error_t *err);

#endif
