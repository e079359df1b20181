#include "adapter/exec_output.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void exec_output_init(struct exec_output *o, size_t cap)
{
	*o = (struct exec_output){ .cap = cap };
}

void exec_output_free(struct exec_output *o)
{
	free(o->data);
	o->data = NULL;
	o->len = 0;
}

int exec_output_append(struct exec_output *o, const void *buf, size_t n, sbx_error_t *err)
{
	size_t room = o->cap - o->len;
	if (n > room) {
		o->truncated = true;
		n = room;
	}
	if (n == 0)
		return 0;
	/* Allocate the cap once: growing in steps would copy up to 1 MiB
	 * repeatedly for a chatty process. */
	if (o->data == NULL && (o->data = malloc(o->cap)) == NULL)
		return sbx_error_errno(err, ENOMEM, "exec output");
	memcpy(o->data + o->len, buf, n);
	o->len += n;
	return 0;
}

/* Length of the valid UTF-8 sequence at p (at most n bytes), or 0. */
static size_t utf8_valid_len(const uint8_t *p, size_t n)
{
	uint8_t c = p[0];
	if (c < 0x80) /* NUL included: U+0000 is valid, callers use lengths */
		return 1;
	size_t len;
	uint8_t lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0; /* overlong */
		else if (c == 0xed)
			hi = 0x9f; /* surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90; /* overlong */
		else if (c == 0xf4)
			hi = 0x8f; /* above U+10FFFF */
	} else {
		return 0;
	}
	if (n < len || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++) {
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	}
	return len;
}

/* How many bytes one U+FFFD replaces: the maximal prefix of a sequence that
 * could still have been valid (the WHATWG / Unicode "best practice"). */
static size_t utf8_invalid_len(const uint8_t *p, size_t n)
{
	uint8_t c = p[0];
	size_t want = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 1;
	size_t i = 1;
	for (; i < want && i < n; i++) {
		uint8_t lo = 0x80, hi = 0xbf;
		if (i == 1 && c == 0xe0)
			lo = 0xa0;
		else if (i == 1 && c == 0xed)
			hi = 0x9f;
		else if (i == 1 && c == 0xf0)
			lo = 0x90;
		else if (i == 1 && c == 0xf4)
			hi = 0x8f;
		if (p[i] < lo || p[i] > hi)
			break;
	}
	return i;
}

char *utf8_lossy(const uint8_t *p, size_t n, size_t *out_len, sbx_error_t *err)
{
	/* Worst case: every byte becomes the 3-byte U+FFFD. */
	if (n > (SIZE_MAX - 1) / 3)
		return sbx_error_set(err, EOVERFLOW, "output too large"), NULL;
	char *out = malloc(n * 3 + 1);
	if (out == NULL)
		return sbx_error_errno(err, ENOMEM, "output decoding"), NULL;
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		size_t v = utf8_valid_len(p + i, n - i);
		if (v > 0) {
			memcpy(out + o, p + i, v);
			o += v;
			i += v;
		} else {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i += utf8_invalid_len(p + i, n - i);
		}
	}
	out[o] = '\0';
	*out_len = o;
	return out;
}

uint64_t exec_effective_timeout_ms(uint64_t requested, uint64_t ceiling)
{
	if (ceiling < 1)
		ceiling = 1;
	return requested < ceiling ? requested : ceiling;
}
