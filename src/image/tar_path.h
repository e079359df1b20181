/* Sanitising of archive entry names before they touch the file system. */
#ifndef SBX_IMAGE_TAR_PATH_H
#define SBX_IMAGE_TAR_PATH_H

#include <stddef.h>

#include "common/error.h"

#define SBX_TAR_PATH_MAX 4096
#define SBX_TAR_DEPTH_MAX 256

/* Writes the relative, normalised form of an entry name: leading '/' and
 * "./" go, empty and "." components collapse, a trailing '/' goes.  ".."
 * anywhere is refused, as are names too long or too deep.  The root itself
 * ("./", "/") gives "". */
int sbx_tar_path_clean(const char *in, char *out, size_t cap, sbx_error_t *err);

#endif
