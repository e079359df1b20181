/* Standard base64 (RFC 4648 alphabet, '=' padding), strict on decode. */
#ifndef SBX_COMMON_BASE64_H
#define SBX_COMMON_BASE64_H

#include <stddef.h>

#include "common/error.h"

/* Decodes `len` bytes of padded base64.  Rejects symbols outside the
 * alphabet, a length that is not a multiple of 4, misplaced padding and
 * non-zero trailing bits.  Returns a malloc'd buffer (NUL-terminated for
 * convenience, *out_len excludes the NUL), or NULL with *err describing the
 * first bad symbol or the bad length. */
unsigned char *sbx_base64_decode(const char *in, size_t len, size_t *out_len, sbx_error_t *err);
/* Encodes `len` bytes as padded base64; returns a malloc'd string. */
char *sbx_base64_encode(const unsigned char *in, size_t len, sbx_error_t *err);

#endif
