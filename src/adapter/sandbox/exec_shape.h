/* The three command shapes of exec (contract §7.4), resolved to one argv:
 * `argv` non-empty; else a `cmd` with whitespace, shlex-split; else `cmd`
 * plus `args`. */
#ifndef SBX_ADAPTER_EXEC_SHAPE_H
#define SBX_ADAPTER_EXEC_SHAPE_H

#include <jansson.h>

#include "common/error.h"

/* `cmd` may be NULL (= ""), `args`/`argv` NULL (= []); arrays hold strings.
 * Returns a new JSON array whose first element is a non-empty program, or
 * NULL with an S001 error. */
json_t *exec_shape_resolve(const char *cmd, json_t *args, json_t *argv, sbx_error_t *err);

#endif
