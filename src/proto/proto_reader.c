/* Incremental frame reader (see proto_reader.h). */
#include "proto/proto_reader.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void proto_reader_init(struct proto_reader *r)
{
	memset(r, 0, sizeof(*r));
}

void proto_reader_free(struct proto_reader *r)
{
	free(r->payload);
	proto_reader_init(r);
}

static size_t take(uint8_t *dst, size_t want, const uint8_t *buf, size_t len)
{
	size_t n = want < len ? want : len;
	if (n > 0)
		memcpy(dst, buf, n);
	return n;
}

int proto_reader_feed(struct proto_reader *r, const uint8_t *buf, size_t len, size_t *used,
		      struct proto_header *h, const uint8_t **payload, sbx_error_t *err)
{
	size_t off = 0;
	*used = 0;
	/* A frame handed out by the previous call is consumed now. */
	if (r->hdr_have == PROTO_HEADER_SIZE && r->payload_have == r->h.length) {
		r->hdr_have = 0;
		r->payload_have = 0;
	}
	if (r->hdr_have < PROTO_HEADER_SIZE) {
		off += take(r->hdr + r->hdr_have, PROTO_HEADER_SIZE - r->hdr_have, buf, len);
		r->hdr_have += off;
		*used = off;
		if (r->hdr_have < PROTO_HEADER_SIZE)
			return 0;
		if (proto_header_decode(r->hdr, &r->h, err) < 0)
			return -1;
		if (r->h.length > r->payload_cap) {
			uint8_t *p = realloc(r->payload, r->h.length);
			if (p == NULL)
				return sbx_error_errno(err, ENOMEM, "frame payload of %u bytes", r->h.length);
			r->payload = p;
			r->payload_cap = r->h.length;
		}
	}
	size_t n = 0;
	if (r->h.length > 0)
		n = take(r->payload + r->payload_have, r->h.length - r->payload_have, buf + off, len - off);
	r->payload_have += n;
	*used = off + n;
	if (r->payload_have < r->h.length)
		return 0;
	*h = r->h;
	*payload = r->payload;
	return 1;
}

uint8_t *proto_reader_room(struct proto_reader *r, size_t *n)
{
	if (r->hdr_have < PROTO_HEADER_SIZE || r->payload_have == r->h.length)
		return NULL;
	*n = r->h.length - r->payload_have;
	return r->payload + r->payload_have;
}

int proto_reader_filled(struct proto_reader *r, size_t n, struct proto_header *h, const uint8_t **payload)
{
	r->payload_have += n;
	if (r->payload_have < r->h.length)
		return 0;
	*h = r->h;
	*payload = r->payload;
	return 1;
}
