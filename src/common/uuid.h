#ifndef SBX_COMMON_UUID_H
#define SBX_COMMON_UUID_H

#include <stdbool.h>

#define SBX_UUID_STRLEN 36 /* canonical form, without the NUL */

/* Writes a random (version 4) UUID in canonical lowercase form. */
int sbx_uuid_v4(char out[SBX_UUID_STRLEN + 1]);
/* Accepts every form the Rust `uuid` crate parses: hyphenated, 32 hex digits,
 * {braced}, urn:uuid:..., any letter case; writes the canonical lowercase
 * hyphenated form.  Returns false for anything else. */
bool sbx_uuid_parse(const char *in, char out[SBX_UUID_STRLEN + 1]);
/* Whether `s` could be read as a sandbox id or the start of one: an id in
 * any form sbx_uuid_parse() accepts, or a non-empty run of hex digits and
 * dashes (what `ps` shows, "3f2a9c1e", "dead-beef"). */
bool sbx_uuid_like(const char *s);

#endif
