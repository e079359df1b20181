/* Payload reader: every read is bounds-checked against the payload, and
 * nothing is allocated before the bytes it describes are known to exist. */
#include "proto/proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void proto_rbuf_init(struct proto_rbuf *r, const void *p, size_t len)
{
	static const uint8_t empty[1];
	/* An empty payload may come as NULL; offsets are never applied to it. */
	r->p = p != NULL ? p : empty;
	r->len = len;
	r->off = 0;
}

static size_t left(const struct proto_rbuf *r)
{
	return r->len - r->off;
}

static int need(struct proto_rbuf *r, size_t n, const char *what, sbx_error_t *err)
{
	if (left(r) < n)
		return sbx_error_set(err, 0, "truncated %s: need %zu bytes, %zu left", what, n, left(r));
	return 0;
}

int proto_get_u32(struct proto_rbuf *r, uint32_t *v, sbx_error_t *err)
{
	if (need(r, 4, "u32", err) < 0)
		return -1;
	const uint8_t *p = r->p + r->off;
	*v = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
	r->off += 4;
	return 0;
}

int proto_get_i32(struct proto_rbuf *r, int32_t *v, sbx_error_t *err)
{
	uint32_t u;
	if (proto_get_u32(r, &u, err) < 0)
		return -1;
	*v = (int32_t)u;
	return 0;
}

int proto_get_u64(struct proto_rbuf *r, uint64_t *v, sbx_error_t *err)
{
	uint32_t hi, lo;
	if (need(r, 8, "u64", err) < 0)
		return -1;
	proto_get_u32(r, &hi, err);
	proto_get_u32(r, &lo, err);
	*v = (uint64_t)hi << 32 | lo;
	return 0;
}

/* Reads a length prefix and checks the bytes behind it are present. */
static int get_len(struct proto_rbuf *r, size_t max, const char *what, uint32_t *n, sbx_error_t *err)
{
	if (proto_get_u32(r, n, err) < 0)
		return sbx_error_prefix(err, "%s length", what);
	if (*n > max)
		return sbx_error_set(err, 0, "%s of %u bytes exceeds %zu", what, *n, max);
	return need(r, *n, what, err);
}

int proto_get_str(struct proto_rbuf *r, char **s, sbx_error_t *err)
{
	uint32_t n;
	if (get_len(r, PROTO_MAX_STR, "string", &n, err) < 0)
		return -1;
	const uint8_t *p = r->p + r->off;
	if (memchr(p, '\0', n) != NULL)
		return sbx_error_set(err, 0, "string contains a NUL byte");
	char *c = malloc((size_t)n + 1);
	if (c == NULL)
		return sbx_error_errno(err, ENOMEM, "string");
	memcpy(c, p, n);
	c[n] = '\0';
	r->off += n;
	*s = c;
	return 0;
}

int proto_get_blob(struct proto_rbuf *r, uint8_t **p, size_t *n, size_t max, sbx_error_t *err)
{
	uint32_t len;
	if (get_len(r, max, "blob", &len, err) < 0)
		return -1;
	uint8_t *c = NULL;
	if (len > 0) {
		c = malloc(len);
		if (c == NULL)
			return sbx_error_errno(err, ENOMEM, "blob");
		memcpy(c, r->p + r->off, len);
	}
	r->off += len;
	*p = c;
	*n = len;
	return 0;
}

int proto_get_strv(struct proto_rbuf *r, char ***v, sbx_error_t *err)
{
	uint32_t n;
	if (proto_get_u32(r, &n, err) < 0)
		return sbx_error_prefix(err, "string vector count");
	if (n > PROTO_MAX_STRV)
		return sbx_error_set(err, 0, "string vector of %u entries exceeds %u", n, PROTO_MAX_STRV);
	/* Each entry takes at least its 4-byte length: a count the payload
	 * cannot hold is rejected before allocating for it. */
	if ((size_t)n > left(r) / 4)
		return sbx_error_set(err, 0, "truncated string vector: %u entries in %zu bytes", n, left(r));
	char **vec = calloc((size_t)n + 1, sizeof(*vec));
	if (vec == NULL)
		return sbx_error_errno(err, ENOMEM, "string vector");
	for (uint32_t i = 0; i < n; i++) {
		if (proto_get_str(r, &vec[i], err) < 0) {
			sbx_strv_free(vec);
			return sbx_error_prefix(err, "entry %u", i);
		}
	}
	*v = vec;
	return 0;
}

int proto_get_end(struct proto_rbuf *r, sbx_error_t *err)
{
	if (left(r) != 0)
		return sbx_error_set(err, 0, "%zu trailing bytes", left(r));
	return 0;
}

int proto_get_path(struct proto_rbuf *r, char **p, const char *what, sbx_error_t *err)
{
	if (proto_get_str(r, p, err) < 0)
		return sbx_error_prefix(err, "%s", what);
	if ((*p)[0] == '\0' || strlen(*p) > PROTO_MAX_PATH)
		return sbx_error_set(err, 0, "%s empty or longer than %u bytes", what, PROTO_MAX_PATH);
	return 0;
}

int proto_get_mode(struct proto_rbuf *r, uint32_t *mode, sbx_error_t *err)
{
	if (proto_get_u32(r, mode, err) < 0)
		return sbx_error_prefix(err, "mode");
	if (*mode > 07777)
		return sbx_error_set(err, 0, "mode 0%o out of range", *mode);
	return 0;
}

int proto_get_flags(struct proto_rbuf *r, uint32_t *flags, uint32_t allowed, const char *what, sbx_error_t *err)
{
	if (proto_get_u32(r, flags, err) < 0)
		return sbx_error_prefix(err, "flags");
	if (*flags & ~allowed)
		return sbx_error_set(err, 0, "unknown %s flags 0x%x", what, *flags & ~allowed);
	return 0;
}
