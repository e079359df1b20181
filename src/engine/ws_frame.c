#include "engine/ws_frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

size_t ws_frame_header(uint8_t hdr[WS_MAX_HEADER], enum ws_opcode op, bool fin, uint64_t len,
		       const uint8_t mask[4])
{
	size_t n = 0;
	hdr[n++] = (uint8_t)((fin ? 0x80 : 0) | (op & 0x0f));
	uint8_t maskbit = mask != NULL ? 0x80 : 0;
	if (len < 126) {
		hdr[n++] = (uint8_t)(maskbit | len);
	} else if (len <= 0xffff) {
		hdr[n++] = maskbit | 126;
		hdr[n++] = (uint8_t)(len >> 8);
		hdr[n++] = (uint8_t)len;
	} else {
		hdr[n++] = maskbit | 127;
		for (int shift = 56; shift >= 0; shift -= 8)
			hdr[n++] = (uint8_t)(len >> shift);
	}
	if (mask != NULL) {
		memcpy(hdr + n, mask, 4);
		n += 4;
	}
	return n;
}

void ws_frame_mask(uint8_t *buf, size_t len, const uint8_t mask[4], size_t offset)
{
	for (size_t i = 0; i < len; i++)
		buf[i] ^= mask[(offset + i) & 3];
}

uint8_t *ws_frame_encode(enum ws_opcode op, bool fin, const void *payload, size_t len, const uint8_t mask[4],
			 size_t *out_len, sbx_error_t *err)
{
	uint8_t hdr[WS_MAX_HEADER];
	size_t hlen = ws_frame_header(hdr, op, fin, len, mask);
	if (len > SIZE_MAX - hlen) {
		sbx_error_set(err, EOVERFLOW, "frame too large");
		return NULL;
	}
	uint8_t *out = malloc(hlen + len);
	if (out == NULL) {
		sbx_error_errno(err, ENOMEM, "encoding a %zu byte frame", len);
		return NULL;
	}
	memcpy(out, hdr, hlen);
	if (len > 0)
		memcpy(out + hlen, payload, len);
	if (mask != NULL)
		ws_frame_mask(out + hlen, len, mask, 0);
	*out_len = hlen + len;
	return out;
}

void ws_decoder_init(struct ws_decoder *d, bool expect_masked, size_t max_message)
{
	memset(d, 0, sizeof(*d));
	d->expect_masked = expect_masked;
	d->max_message = max_message != 0 ? max_message : WS_DEFAULT_MAX_MESSAGE;
	d->frag_opcode = WS_OP_CONTINUATION;
}

void ws_decoder_free(struct ws_decoder *d)
{
	free(d->frag);
	d->frag = NULL;
	d->frag_len = d->frag_cap = 0;
	d->frag_opcode = WS_OP_CONTINUATION;
}

static int append_fragment(struct ws_decoder *d, const uint8_t *p, size_t n, sbx_error_t *err)
{
	/* max_message was checked by the caller, so this cannot overflow. */
	size_t want = d->frag_len + n;
	if (want > d->frag_cap) {
		size_t cap = d->frag_cap ? d->frag_cap : 4096;
		while (cap < want)
			cap *= 2;
		if (cap > d->max_message)
			cap = d->max_message;
		uint8_t *nb = realloc(d->frag, cap);
		if (nb == NULL)
			return sbx_error_errno(err, ENOMEM, "reassembling a %zu byte message", want);
		d->frag = nb;
		d->frag_cap = cap;
	}
	if (n > 0)
		memcpy(d->frag + d->frag_len, p, n);
	d->frag_len = want;
	return 0;
}

static bool is_control(unsigned op)
{
	return op >= 0x8;
}

/* Parses one frame header; returns its length, 0 if incomplete, -1 if the
 * header breaks the protocol. */
static int parse_header(struct ws_decoder *d, const uint8_t *buf, size_t len, bool *fin, unsigned *op,
			uint64_t *plen, const uint8_t **mask, sbx_error_t *err)
{
	if (len < 2)
		return 0;
	*fin = (buf[0] & 0x80) != 0;
	*op = buf[0] & 0x0f;
	bool masked = (buf[1] & 0x80) != 0;
	uint64_t l = buf[1] & 0x7f;

	/* No extension is ever negotiated, so every reserved bit must be 0. */
	if (buf[0] & 0x70)
		return sbx_error_set(err, EPROTO, "reserved bits set in a WebSocket frame");
	if (*op != WS_OP_CONTINUATION && *op != WS_OP_TEXT && *op != WS_OP_BINARY && *op != WS_OP_CLOSE &&
	    *op != WS_OP_PING && *op != WS_OP_PONG)
		return sbx_error_set(err, EPROTO, "unknown WebSocket opcode 0x%x", *op);
	if (masked != d->expect_masked)
		return sbx_error_set(err, EPROTO, masked ? "masked frame from the server" : "unmasked frame from a client");
	if (is_control(*op) && (!*fin || l > WS_MAX_CONTROL_PAYLOAD))
		return sbx_error_set(err, EPROTO, "fragmented or oversized WebSocket control frame");

	size_t n = 2;
	if (l == 126) {
		if (len < n + 2)
			return 0;
		l = ((uint64_t)buf[2] << 8) | buf[3];
		n += 2;
	} else if (l == 127) {
		if (len < n + 8)
			return 0;
		l = 0;
		for (int i = 0; i < 8; i++)
			l = (l << 8) | buf[2 + i];
		if (l >> 63)
			return sbx_error_set(err, EPROTO, "WebSocket frame length has its top bit set");
		n += 8;
	}
	if (masked) {
		if (len < n + 4)
			return 0;
		*mask = buf + n;
		n += 4;
	} else {
		*mask = NULL;
	}
	*plen = l;
	return (int)n;
}

int ws_decoder_next(struct ws_decoder *d, uint8_t *buf, size_t len, size_t *consumed, size_t *need,
		    struct ws_message *msg, sbx_error_t *err)
{
	size_t off = 0;
	*consumed = 0;
	*need = 0;
	for (;;) {
		bool fin = false;
		unsigned op = 0;
		uint64_t plen = 0;
		const uint8_t *mask = NULL;
		int h = parse_header(d, buf + off, len - off, &fin, &op, &plen, &mask, err);
		if (h < 0)
			return -1;
		if (h == 0) {
			*need = WS_MAX_HEADER; /* enough to see any header */
			*consumed = off;
			return 0;
		}

		if (op == WS_OP_CONTINUATION && d->frag_opcode == WS_OP_CONTINUATION)
			return sbx_error_set(err, EPROTO, "continuation frame without a message to continue");
		if ((op == WS_OP_TEXT || op == WS_OP_BINARY) && d->frag_opcode != WS_OP_CONTINUATION)
			return sbx_error_set(err, EPROTO, "new data frame inside a fragmented message");
		uint64_t total = is_control(op) ? plen : d->frag_len + plen;
		if (total > d->max_message)
			return sbx_error_set(err, EMSGSIZE, "WebSocket message of %llu bytes exceeds the %zu byte limit",
					     (unsigned long long)total, d->max_message);

		size_t frame_len = (size_t)h + (size_t)plen;
		if (len - off < frame_len) {
			*consumed = off;
			*need = frame_len;
			return 0;
		}
		uint8_t *payload = buf + off + h;
		if (mask != NULL) {
			uint8_t key[4];
			memcpy(key, mask, 4);
			ws_frame_mask(payload, (size_t)plen, key, 0);
		}
		off += frame_len;

		if (is_control(op)) {
			if (op == WS_OP_CLOSE && plen == 1)
				return sbx_error_set(err, EPROTO, "close frame with a 1-byte payload");
			msg->opcode = (enum ws_opcode)op;
			msg->data = payload;
			msg->len = (size_t)plen;
			*consumed = off;
			return 1;
		}
		if (fin && op != WS_OP_CONTINUATION) {
			/* Unfragmented: hand out the payload where it lies. */
			msg->opcode = (enum ws_opcode)op;
			msg->data = payload;
			msg->len = (size_t)plen;
			*consumed = off;
			return 1;
		}
		if (op != WS_OP_CONTINUATION) {
			d->frag_opcode = (enum ws_opcode)op;
			d->frag_len = 0;
		}
		if (append_fragment(d, payload, (size_t)plen, err) < 0)
			return -1;
		if (fin) {
			msg->opcode = d->frag_opcode;
			msg->data = d->frag;
			msg->len = d->frag_len;
			d->frag_opcode = WS_OP_CONTINUATION;
			/* The next message resets frag_len; the data stays valid until then. */
			d->frag_len = 0;
			*consumed = off;
			return 1;
		}
	}
}
