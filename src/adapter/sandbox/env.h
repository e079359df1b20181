/* The `env` field of create, exec and run: a list of "K=V" strings (passed
 * on unvalidated; the guest drops entries without '=') or a {K: V} map whose
 * names must match [A-Za-z_][A-Za-z0-9_]* and which is emitted sorted by
 * key (byte order). */
#ifndef SBX_ADAPTER_ENV_H
#define SBX_ADAPTER_ENV_H

#include <jansson.h>
#include <stdbool.h>

#include "common/error.h"

/* Decode step: *out (borrowed) is the list or map, NULL when absent; any
 * other shape is a decode error, an entry with a NUL byte S001. */
int env_decode(json_t *req, const char *field, json_t **out, sbx_error_t *err);
/* Validation step: a new JSON array of "K=V" strings (empty for NULL), or
 * NULL with S001 naming the invalid map keys. */
json_t *env_resolve(json_t *env, sbx_error_t *err);
bool env_name_is_valid(const char *name);

#endif
