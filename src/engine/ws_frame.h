/* RFC 6455 framing: an encoder for single frames and a pure, incremental
 * decoder that turns a byte buffer into whole messages.  No I/O here: this is
 * the part fed with hostile bytes, and the part that is fuzzed. */
#ifndef SBX_ENGINE_WS_FRAME_H
#define SBX_ENGINE_WS_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

enum ws_opcode {
	WS_OP_CONTINUATION = 0x0,
	WS_OP_TEXT = 0x1,
	WS_OP_BINARY = 0x2,
	WS_OP_CLOSE = 0x8,
	WS_OP_PING = 0x9,
	WS_OP_PONG = 0xA,
};

#define WS_MAX_HEADER 14
#define WS_MAX_CONTROL_PAYLOAD 125
#define WS_DEFAULT_MAX_MESSAGE (16u * 1024 * 1024)

/* Writes one frame header for a payload of `len` bytes into hdr; returns its
 * size.  `mask` NULL means an unmasked (server) frame. */
size_t ws_frame_header(uint8_t hdr[WS_MAX_HEADER], enum ws_opcode op, bool fin, uint64_t len,
		       const uint8_t mask[4]);
/* XORs buf with the masking key, `offset` being buf's position in the
 * payload. */
void ws_frame_mask(uint8_t *buf, size_t len, const uint8_t mask[4], size_t offset);
/* Allocates header + (masked) payload as one buffer ready to send. */
uint8_t *ws_frame_encode(enum ws_opcode op, bool fin, const void *payload, size_t len, const uint8_t mask[4],
			 size_t *out_len, sbx_error_t *err);

/* One complete message (or control frame).  `data` points into the buffer
 * given to ws_decoder_next() or into the decoder; it stays valid until the
 * next call to ws_decoder_next() or until the buffer changes. */
struct ws_message {
	enum ws_opcode opcode; /* TEXT, BINARY, CLOSE, PING or PONG */
	uint8_t *data;
	size_t len;
};

struct ws_decoder {
	bool expect_masked; /* true on the server side */
	size_t max_message;
	enum ws_opcode frag_opcode; /* data message being reassembled, or CONTINUATION */
	uint8_t *frag;
	size_t frag_len, frag_cap;
};

void ws_decoder_init(struct ws_decoder *d, bool expect_masked, size_t max_message);
void ws_decoder_free(struct ws_decoder *d);

/* Decodes frames from buf[0..len).  Returns 1 with *msg set when a message is
 * complete, 0 when more bytes are needed, -1 on a protocol violation (the
 * connection must then be failed).  *consumed is the number of bytes used
 * (drop them, after using *msg, before the next call); on 0, *need is the
 * number of bytes the next frame needs counted from buf + *consumed, already
 * checked against max_message: grow the buffer to hold that many.  Masked
 * payloads are unmasked in place. */
int ws_decoder_next(struct ws_decoder *d, uint8_t *buf, size_t len, size_t *consumed, size_t *need,
		    struct ws_message *msg, sbx_error_t *err);

#endif
