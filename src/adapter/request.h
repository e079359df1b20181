/* Typed access to request fields.  A request that does not fit its
 * function's schema fails before the handler does anything, as a decode
 * error (scode SBX_SCODE_DECODE) whose text follows serde's wording and
 * names the field: "missing field `path`", "invalid type: integer `5`,
 * expected a string for field `path`".  Unknown fields (including the
 * engine's `_caller_worker_id`) are ignored.  An optional field holding null
 * counts as absent. */
#ifndef SBX_ADAPTER_REQUEST_H
#define SBX_ADAPTER_REQUEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "common/uuid.h"

/* The payload itself must be a JSON object. */
int req_object(json_t *req, sbx_error_t *err);

/* *out is borrowed from `req`; NULL when an optional field is absent.  A
 * string holding a NUL byte (JSON's \u0000) is S001 "<field> contains a
 * NUL byte": as a C string it would be silently cut short. */
int req_string(json_t *req, const char *field, bool required, const char **out, sbx_error_t *err);
/* Like req_string() for bytes that never become a C string (file content):
 * NUL bytes allowed, *len is the full length. */
int req_bytes(json_t *req, const char *field, bool required, const char **out, size_t *len, sbx_error_t *err);
int req_bool(json_t *req, const char *field, bool def, bool *out, sbx_error_t *err);
int req_u64(json_t *req, const char *field, uint64_t def, uint64_t *out, sbx_error_t *err);
int req_u32(json_t *req, const char *field, uint32_t def, uint32_t *out, sbx_error_t *err);
/* `present` (may be NULL) tells whether the field was given. */
int req_u32_opt(json_t *req, const char *field, bool *present, uint32_t *out, sbx_error_t *err);
/* An array of strings without NUL bytes; *out borrowed, NULL when absent. */
int req_string_array(json_t *req, const char *field, json_t **out, sbx_error_t *err);
/* A NULL-terminated view of a string array from req_string_array (NULL
 * or empty gives an empty view): free the vector, not the strings, which
 * stay the request's. */
char **req_strv_view(json_t *arr, const char *field, sbx_error_t *err);

/* S001 "<field> contains a NUL byte" when the string `v` holds one. */
int req_check_nul(json_t *v, const char *field, sbx_error_t *err);

/* Sets a decode error "invalid type: <what `v` is>, expected <expected>
 * for field `<field>`". */
int req_type_error(json_t *v, const char *field, const char *expected, sbx_error_t *err);

/* Checks of a record the daemon wrote and reads back from disk (paused
 * sandboxes, snapshots, their processes: hostile all the same): an
 * integer within [lo, hi]; a string of 1..max bytes with no NUL. */
bool req_int_in(json_t *v, int64_t lo, int64_t hi);
bool req_str_max(json_t *v, size_t max);

/* Parses a sandbox id in any UUID form into its canonical form; S001
 * "sandbox_id is not a valid UUID: <input>" otherwise. */
int req_sandbox_uuid(const char *input, char out[SBX_UUID_STRLEN + 1], sbx_error_t *err);

#endif
