/* Payload writer: appends big-endian fields, remembers the first failure so
 * callers check once at the end (proto_frame refuses a failed buffer). */
#include "proto/proto.h"

#include <stdlib.h>
#include <string.h>

void proto_wbuf_init(struct proto_wbuf *b)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->failed = 0;
}

void proto_wbuf_free(struct proto_wbuf *b)
{
	free(b->data);
	proto_wbuf_init(b);
}

/* Whole frames are capped, so anything beyond header + max payload is a bug
 * or hostile input, never a reason to grow. */
#define WBUF_LIMIT (PROTO_HEADER_SIZE + PROTO_MAX_PAYLOAD)

static int reserve(struct proto_wbuf *b, size_t n)
{
	if (b->failed)
		return -1;
	if (n > WBUF_LIMIT || b->len > WBUF_LIMIT - n) {
		b->failed = 1;
		return -1;
	}
	if (b->len + n <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < b->len + n)
		cap *= 2;
	uint8_t *p = realloc(b->data, cap);
	if (p == NULL) {
		b->failed = 1;
		return -1;
	}
	b->data = p;
	b->cap = cap;
	return 0;
}

void proto_put_bytes(struct proto_wbuf *b, const void *p, size_t n)
{
	if (n == 0 || reserve(b, n) < 0)
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

void proto_put_u32(struct proto_wbuf *b, uint32_t v)
{
	uint8_t x[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };
	proto_put_bytes(b, x, sizeof(x));
}

void proto_put_i32(struct proto_wbuf *b, int32_t v)
{
	proto_put_u32(b, (uint32_t)v);
}

void proto_put_u64(struct proto_wbuf *b, uint64_t v)
{
	proto_put_u32(b, (uint32_t)(v >> 32));
	proto_put_u32(b, (uint32_t)v);
}

void proto_put_strn(struct proto_wbuf *b, const char *s, size_t n)
{
	if (n > PROTO_MAX_STR) {
		b->failed = 1; /* never truncate silently */
		return;
	}
	proto_put_u32(b, (uint32_t)n);
	proto_put_bytes(b, s, n);
}

void proto_put_str(struct proto_wbuf *b, const char *s)
{
	proto_put_strn(b, s, strlen(s));
}

void proto_put_strv(struct proto_wbuf *b, char *const *v)
{
	size_t n = 0;
	while (v != NULL && v[n] != NULL)
		n++;
	if (n > PROTO_MAX_STRV) {
		b->failed = 1;
		return;
	}
	proto_put_u32(b, (uint32_t)n);
	for (size_t i = 0; i < n; i++)
		proto_put_str(b, v[i]);
}
