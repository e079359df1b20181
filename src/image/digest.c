#include "image/digest.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct sbx_sha256 {
	EVP_MD_CTX *ctx;
};

bool sbx_digest_valid(const char *s)
{
	if (strncmp(s, "sha256:", 7) != 0 || strlen(s) != SBX_DIGEST_LEN)
		return false;
	for (const char *p = s + 7; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

struct sbx_sha256 *sbx_sha256_new(sbx_error_t *err)
{
	struct sbx_sha256 *h = calloc(1, sizeof(*h));
	if (h == NULL) {
		sbx_error_errno(err, ENOMEM, "sha256");
		return NULL;
	}
	h->ctx = EVP_MD_CTX_new();
	if (h->ctx == NULL || EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
		sbx_sha256_free(h);
		sbx_error_set(err, 0, "sha256: cannot initialise OpenSSL digest");
		return NULL;
	}
	return h;
}

int sbx_sha256_update(struct sbx_sha256 *h, const void *data, size_t len, sbx_error_t *err)
{
	if (EVP_DigestUpdate(h->ctx, data, len) != 1)
		return sbx_error_set(err, 0, "sha256: digest update failed");
	return 0;
}

int sbx_sha256_final(struct sbx_sha256 *h, char out[SBX_DIGEST_LEN + 1], sbx_error_t *err)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	if (EVP_DigestFinal_ex(h->ctx, md, &n) != 1 || n != 32)
		return sbx_error_set(err, 0, "sha256: digest final failed");
	static const char hex[] = "0123456789abcdef";
	memcpy(out, "sha256:", 7);
	for (unsigned i = 0; i < 32; i++) {
		out[7 + 2 * i] = hex[md[i] >> 4];
		out[8 + 2 * i] = hex[md[i] & 15];
	}
	out[SBX_DIGEST_LEN] = '\0';
	return 0;
}

void sbx_sha256_free(struct sbx_sha256 *h)
{
	if (h == NULL)
		return;
	EVP_MD_CTX_free(h->ctx);
	free(h);
}

int sbx_sha256_buf(const void *data, size_t len, char out[SBX_DIGEST_LEN + 1], sbx_error_t *err)
{
	struct sbx_sha256 *h = sbx_sha256_new(err);
	if (h == NULL)
		return -1;
	int rc = sbx_sha256_update(h, data, len, err) < 0 || sbx_sha256_final(h, out, err) < 0 ? -1 : 0;
	sbx_sha256_free(h);
	return rc;
}

int sbx_sha256_fd(int fd, char out[SBX_DIGEST_LEN + 1], sbx_error_t *err)
{
	struct sbx_sha256 *h = sbx_sha256_new(err);
	if (h == NULL)
		return -1;
	char buf[65536];
	off_t off = 0;
	int rc = 0;
	for (;;) {
		ssize_t n = pread(fd, buf, sizeof(buf), off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = sbx_error_errno(err, errno, "sha256: read");
			break;
		}
		if (n == 0) {
			rc = sbx_sha256_final(h, out, err);
			break;
		}
		if (sbx_sha256_update(h, buf, (size_t)n, err) < 0) {
			rc = -1;
			break;
		}
		off += n;
	}
	sbx_sha256_free(h);
	return rc;
}
