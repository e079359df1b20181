/* One YAML document (libyaml) as a jansson value, for the worker manifest
 * and `serve --config`.  Hostile input is refused, not expanded: aliases
 * (the "billion laughs"), duplicate keys, keys that are not scalars, more
 * than one document, nesting deeper than YAML_JSON_MAX_DEPTH, more than
 * YAML_JSON_MAX_EVENTS parser events, NUL bytes.  Errors name the key path
 * ("env.PORT", "tags[2]") and the line. */
#ifndef SBX_COMMON_YAML_JSON_H
#define SBX_COMMON_YAML_JSON_H

#include <jansson.h>
#include <stddef.h>

#include "common/error.h"

#define YAML_JSON_MAX_DEPTH 64
#define YAML_JSON_MAX_EVENTS (1u << 20)

/* Plain scalars are typed as YAML 1.2's core schema does (null, true/false,
 * integers, floats; anything else a string); quoted and block scalars are
 * strings.  Under a top-level key listed in `text_keys` (NULL-terminated,
 * may be NULL) every scalar stays the text it was written as ("1.10" is not
 * 1.1).  An empty document is JSON null. */
json_t *yaml_to_json(const char *text, size_t len, const char *const *text_keys, sbx_error_t *err);

#endif
