/* Frame header codec and whole-frame assembly. */
#include "proto/proto.h"

#include <string.h>

static int type_known(uint8_t t)
{
	if (t >= PROTO_HELLO && t <= PROTO_RESUMED)
		return 1;
	if (t >= PROTO_SPAWN && t <= PROTO_RESIZE)
		return 1;
	return t >= PROTO_FS_FIRST && t <= PROTO_FS_LAST;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

void proto_header_encode(const struct proto_header *h, uint8_t out[PROTO_HEADER_SIZE])
{
	put_be32(out, h->length);
	put_be32(out + 4, h->stream);
	out[8] = h->type;
}

int proto_header_decode(const uint8_t in[PROTO_HEADER_SIZE], struct proto_header *h, sbx_error_t *err)
{
	uint32_t length = get_be32(in);
	if (length > PROTO_MAX_PAYLOAD)
		return sbx_error_set(err, 0, "frame payload of %u bytes exceeds %u", length, PROTO_MAX_PAYLOAD);
	if (!type_known(in[8]))
		return sbx_error_set(err, 0, "unknown frame type 0x%02x", in[8]);
	h->length = length;
	h->stream = get_be32(in + 4);
	h->type = in[8];
	return 0;
}

int proto_frame(struct proto_wbuf *out, uint32_t stream, uint8_t type, const struct proto_wbuf *payload,
		sbx_error_t *err)
{
	size_t plen = payload != NULL ? payload->len : 0;
	if (payload != NULL && payload->failed)
		return sbx_error_set(err, 0, "frame type 0x%02x: payload could not be built", type);
	if (plen > PROTO_MAX_PAYLOAD)
		return sbx_error_set(err, 0, "frame type 0x%02x: payload of %zu bytes exceeds %u", type, plen,
				     PROTO_MAX_PAYLOAD);
	uint8_t hdr[PROTO_HEADER_SIZE];
	struct proto_header h = { .length = (uint32_t)plen, .stream = stream, .type = type };
	proto_header_encode(&h, hdr);
	out->len = 0;
	out->failed = 0;
	proto_put_bytes(out, hdr, sizeof(hdr));
	if (plen > 0)
		proto_put_bytes(out, payload->data, plen);
	if (out->failed)
		return sbx_error_set(err, 0, "frame type 0x%02x: out of memory", type);
	return 0;
}
