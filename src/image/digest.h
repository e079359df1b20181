/* sha256 content digests ("sha256:<64 lowercase hex>") via OpenSSL EVP. */
#ifndef SBX_IMAGE_DIGEST_H
#define SBX_IMAGE_DIGEST_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

#define SBX_DIGEST_LEN 71 /* "sha256:" + 64 hex digits */

bool sbx_digest_valid(const char *s);
/* The 64 hex digits of a valid digest. */
static inline const char *sbx_digest_hex(const char *digest)
{
	return digest + 7;
}

struct sbx_sha256;
struct sbx_sha256 *sbx_sha256_new(sbx_error_t *err);
int sbx_sha256_update(struct sbx_sha256 *h, const void *data, size_t len, sbx_error_t *err);
int sbx_sha256_final(struct sbx_sha256 *h, char out[SBX_DIGEST_LEN + 1], sbx_error_t *err);
void sbx_sha256_free(struct sbx_sha256 *h);

int sbx_sha256_buf(const void *data, size_t len, char out[SBX_DIGEST_LEN + 1], sbx_error_t *err);
/* Digest of a whole file, read from its start. */
int sbx_sha256_fd(int fd, char out[SBX_DIGEST_LEN + 1], sbx_error_t *err);

#endif
