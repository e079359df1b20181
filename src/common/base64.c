#include "common/base64.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int sym_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

unsigned char *sbx_base64_decode(const char *in, size_t len, size_t *out_len, sbx_error_t *err)
{
	if (len % 4 != 0)
		return sbx_error_set(err, EINVAL, "invalid input length %zu (not a multiple of 4)", len), NULL;
	size_t pad = 0;
	if (len > 0 && in[len - 1] == '=')
		pad = (len > 1 && in[len - 2] == '=') ? 2 : 1;
	/* len / 4 * 3 cannot overflow: it is smaller than len. */
	unsigned char *out = malloc(len / 4 * 3 + 1);
	if (out == NULL)
		return sbx_error_errno(err, ENOMEM, "base64 decode"), NULL;
	size_t o = 0;
	for (size_t i = 0; i < len; i += 4) {
		uint32_t acc = 0;
		size_t valid = (i + 4 == len) ? 4 - pad : 4;
		for (size_t j = 0; j < 4; j++) {
			unsigned char c = (unsigned char)in[i + j];
			int v = j < valid ? sym_value(c) : (c == '=' ? 0 : -1);
			if (v < 0) {
				free(out);
				return sbx_error_set(err, EINVAL, "invalid symbol %u, offset %zu", c, i + j), NULL;
			}
			acc = (acc << 6) | (uint32_t)v;
		}
		/* Bits below the last full byte must be zero in canonical input. */
		if ((valid == 2 && (acc & 0xFFFF) != 0) || (valid == 3 && (acc & 0xFF) != 0)) {
			free(out);
			return sbx_error_set(err, EINVAL, "invalid last symbol %u, offset %zu",
					     (unsigned char)in[i + valid - 1], i + valid - 1), NULL;
		}
		out[o++] = (unsigned char)(acc >> 16);
		if (valid > 2)
			out[o++] = (unsigned char)(acc >> 8);
		if (valid > 3)
			out[o++] = (unsigned char)acc;
	}
	out[o] = '\0';
	*out_len = o;
	return out;
}

char *sbx_base64_encode(const unsigned char *in, size_t len, sbx_error_t *err)
{
	if (len > (SIZE_MAX - 1) / 4 * 3 - 3)
		return sbx_error_set(err, EOVERFLOW, "base64 encode: input too large"), NULL;
	char *out = malloc((len + 2) / 3 * 4 + 1);
	if (out == NULL)
		return sbx_error_errno(err, ENOMEM, "base64 encode"), NULL;
	size_t o = 0;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t acc = (uint32_t)in[i] << 16;
		if (i + 1 < len)
			acc |= (uint32_t)in[i + 1] << 8;
		if (i + 2 < len)
			acc |= in[i + 2];
		out[o++] = alphabet[(acc >> 18) & 63];
		out[o++] = alphabet[(acc >> 12) & 63];
		out[o++] = i + 1 < len ? alphabet[(acc >> 6) & 63] : '=';
		out[o++] = i + 2 < len ? alphabet[acc & 63] : '=';
	}
	out[o] = '\0';
	return out;
}
