/* POSIX shell word splitting without a shell: single quotes, double quotes
 * (where \ escapes only $ ` " \ and newline), backslash escapes, '#'
 * comments at the start of a word; no expansion, and operators (; | && >)
 * stay literal text.  Words are separated by space, tab and newline. */
#ifndef SBX_ADAPTER_SHLEX_H
#define SBX_ADAPTER_SHLEX_H

#include <jansson.h>

#include "common/error.h"

/* Returns a new JSON array of the words, or NULL with errnum EINVAL for an
 * unbalanced quote or a trailing backslash (ENOMEM when out of memory). */
json_t *sbx_shlex_split(const char *s, sbx_error_t *err);

#endif
