#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engine/ws_frame.h"
#include "harness.h"

static const uint8_t key[4] = { 0x37, 0xfa, 0x21, 0x3d };

TEST(frame_encode_rfc_examples)
{
	/* RFC 6455 5.7: unmasked and masked "Hello". */
	size_t n;
	sbx_error_t err = NULL;
	uint8_t *f = ws_frame_encode(WS_OP_TEXT, true, "Hello", 5, NULL, &n, &err);
	CHECK(f != NULL);
	static const uint8_t plain[] = { 0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f };
	CHECK_INT(n, sizeof(plain));
	CHECK(memcmp(f, plain, n) == 0);
	free(f);
	f = ws_frame_encode(WS_OP_TEXT, true, "Hello", 5, key, &n, &err);
	static const uint8_t masked[] = { 0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58 };
	CHECK_INT(n, sizeof(masked));
	CHECK(memcmp(f, masked, n) == 0);
	free(f);
	/* Unfragmented first fragment of a text message: FIN clear. */
	f = ws_frame_encode(WS_OP_TEXT, false, "Hel", 3, NULL, &n, &err);
	CHECK(f[0] == 0x01 && f[1] == 0x03);
	free(f);
}

TEST(frame_header_length_forms)
{
	uint8_t h[WS_MAX_HEADER];
	CHECK_INT(ws_frame_header(h, WS_OP_BINARY, true, 125, NULL), 2);
	CHECK(h[1] == 125);
	CHECK_INT(ws_frame_header(h, WS_OP_BINARY, true, 126, NULL), 4);
	CHECK(h[1] == 126 && h[2] == 0 && h[3] == 126);
	CHECK_INT(ws_frame_header(h, WS_OP_BINARY, true, 65535, NULL), 4);
	CHECK(h[2] == 0xff && h[3] == 0xff);
	CHECK_INT(ws_frame_header(h, WS_OP_BINARY, true, 65536, NULL), 10);
	CHECK(h[1] == 127 && h[2] == 0 && h[7] == 1 && h[8] == 0 && h[9] == 0);
	CHECK_INT(ws_frame_header(h, WS_OP_BINARY, true, 65536, key), 14);
	CHECK(h[1] == (0x80 | 127) && memcmp(h + 10, key, 4) == 0);
}

/* Encodes then decodes one message of `len` bytes with the given mask. */
static int roundtrip(size_t len, const uint8_t *mask)
{
	uint8_t *payload = malloc(len + 1);
	for (size_t i = 0; i < len; i++)
		payload[i] = (uint8_t)(i * 7 + 3);
	size_t n;
	sbx_error_t err = NULL;
	uint8_t *f = ws_frame_encode(WS_OP_BINARY, true, payload, len, mask, &n, &err);
	struct ws_decoder d;
	ws_decoder_init(&d, mask != NULL, 0);
	struct ws_message m;
	size_t used, need;
	int ok = 1;
	/* Every proper prefix asks for more and consumes nothing. */
	for (size_t cut = 0; cut < n; cut += 1 + cut / 3) {
		if (ws_decoder_next(&d, f, cut, &used, &need, &m, &err) != 0 || used != 0 || need < cut)
			ok = 0;
	}
	if (ws_decoder_next(&d, f, n, &used, &need, &m, &err) != 1 || used != n || m.opcode != WS_OP_BINARY ||
	    m.len != len || (len > 0 && memcmp(m.data, payload, len) != 0))
		ok = 0;
	ws_decoder_free(&d);
	sbx_error_free(&err);
	free(f);
	free(payload);
	return ok;
}

TEST(frame_roundtrip_all_length_forms)
{
	static const size_t lens[] = { 0, 1, 125, 126, 127, 65535, 65536, 70000 };
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		CHECK(roundtrip(lens[i], NULL));
		CHECK(roundtrip(lens[i], key));
	}
}

TEST(frame_need_reports_whole_frame)
{
	uint8_t hdr[WS_MAX_HEADER];
	size_t hl = ws_frame_header(hdr, WS_OP_BINARY, true, 70000, NULL);
	struct ws_decoder d;
	ws_decoder_init(&d, false, 0);
	struct ws_message m;
	size_t used, need;
	sbx_error_t err = NULL;
	CHECK_INT(ws_decoder_next(&d, hdr, hl, &used, &need, &m, &err), 0);
	CHECK_INT(need, hl + 70000);
	ws_decoder_free(&d);
}

/* Concatenates frames into one buffer. */
struct buf {
	uint8_t b[4096];
	size_t n;
};

static void add(struct buf *b, enum ws_opcode op, bool fin, const char *s)
{
	size_t n;
	sbx_error_t err = NULL;
	uint8_t *f = ws_frame_encode(op, fin, s, strlen(s), NULL, &n, &err);
	memcpy(b->b + b->n, f, n);
	b->n += n;
	free(f);
}

TEST(frame_fragments_with_interleaved_control)
{
	struct buf b = { .n = 0 };
	add(&b, WS_OP_TEXT, false, "Hel");
	add(&b, WS_OP_PING, true, "p");
	add(&b, WS_OP_CONTINUATION, false, "lo, ");
	add(&b, WS_OP_CONTINUATION, true, "world");
	add(&b, WS_OP_BINARY, true, "next");

	struct ws_decoder d;
	ws_decoder_init(&d, false, 0);
	struct ws_message m;
	size_t used, need, off = 0;
	sbx_error_t err = NULL;
	CHECK_INT(ws_decoder_next(&d, b.b, b.n, &used, &need, &m, &err), 1);
	CHECK_INT(m.opcode, WS_OP_PING);
	CHECK(m.len == 1 && m.data[0] == 'p');
	off += used;
	CHECK_INT(ws_decoder_next(&d, b.b + off, b.n - off, &used, &need, &m, &err), 1);
	CHECK_INT(m.opcode, WS_OP_TEXT);
	CHECK_INT(m.len, 12);
	CHECK(memcmp(m.data, "Hello, world", 12) == 0);
	off += used;
	CHECK_INT(ws_decoder_next(&d, b.b + off, b.n - off, &used, &need, &m, &err), 1);
	CHECK_INT(m.opcode, WS_OP_BINARY);
	CHECK(m.len == 4 && memcmp(m.data, "next", 4) == 0);
	off += used;
	CHECK_INT(off, b.n);
	CHECK_INT(ws_decoder_next(&d, b.b + off, 0, &used, &need, &m, &err), 0);
	ws_decoder_free(&d);
}

TEST(frame_close_and_pong)
{
	struct buf b = { .n = 0 };
	add(&b, WS_OP_PONG, true, "");
	add(&b, WS_OP_CLOSE, true, "\x03\xe8" "bye");
	struct ws_decoder d;
	ws_decoder_init(&d, false, 0);
	struct ws_message m;
	size_t used, need;
	sbx_error_t err = NULL;
	CHECK_INT(ws_decoder_next(&d, b.b, b.n, &used, &need, &m, &err), 1);
	CHECK_INT(m.opcode, WS_OP_PONG);
	CHECK_INT(m.len, 0);
	CHECK_INT(ws_decoder_next(&d, b.b + used, b.n - used, &used, &need, &m, &err), 1);
	CHECK_INT(m.opcode, WS_OP_CLOSE);
	CHECK(m.len == 5 && m.data[0] == 0x03 && m.data[1] == 0xe8);
	ws_decoder_free(&d);
}

/* Expects the bytes to be rejected with errno `want`. */
static int rejects(const uint8_t *bytes, size_t n, bool expect_masked, size_t max, int want)
{
	uint8_t copy[256];
	memcpy(copy, bytes, n);
	struct ws_decoder d;
	ws_decoder_init(&d, expect_masked, max);
	struct ws_message m;
	size_t used, need;
	sbx_error_t err = NULL;
	int r = ws_decoder_next(&d, copy, n, &used, &need, &m, &err);
	int ok = r == -1 && err != NULL && err->errnum == want;
	sbx_error_free(&err);
	ws_decoder_free(&d);
	return ok;
}

TEST(frame_rejections)
{
	/* reserved bits RSV1, RSV2, RSV3 */
	CHECK(rejects((const uint8_t[]){ 0xC1, 0x00 }, 2, false, 0, EPROTO));
	CHECK(rejects((const uint8_t[]){ 0xA1, 0x00 }, 2, false, 0, EPROTO));
	CHECK(rejects((const uint8_t[]){ 0x91, 0x00 }, 2, false, 0, EPROTO));
	/* reserved opcodes */
	for (uint8_t op = 3; op <= 7; op++)
		CHECK(rejects((const uint8_t[]){ (uint8_t)(0x80 | op), 0x00 }, 2, false, 0, EPROTO));
	for (uint8_t op = 0xB; op <= 0xF; op++)
		CHECK(rejects((const uint8_t[]){ (uint8_t)(0x80 | op), 0x00 }, 2, false, 0, EPROTO));
	/* masked frame to a client, unmasked frame to a server */
	CHECK(rejects((const uint8_t[]){ 0x81, 0x80, 1, 2, 3, 4 }, 6, false, 0, EPROTO));
	CHECK(rejects((const uint8_t[]){ 0x81, 0x00 }, 2, true, 0, EPROTO));
	/* fragmented control frames */
	CHECK(rejects((const uint8_t[]){ 0x09, 0x00 }, 2, false, 0, EPROTO));
	CHECK(rejects((const uint8_t[]){ 0x08, 0x00 }, 2, false, 0, EPROTO));
	/* control frame over 125 bytes (16-bit form) */
	CHECK(rejects((const uint8_t[]){ 0x89, 126, 0x00, 126 }, 4, false, 0, EPROTO));
	CHECK(rejects((const uint8_t[]){ 0x8A, 126 }, 2, false, 0, EPROTO));
	/* close with a 1-byte payload */
	CHECK(rejects((const uint8_t[]){ 0x88, 0x01, 0x03 }, 3, false, 0, EPROTO));
	/* continuation with nothing to continue */
	CHECK(rejects((const uint8_t[]){ 0x80, 0x00 }, 2, false, 0, EPROTO));
	CHECK(rejects((const uint8_t[]){ 0x00, 0x00 }, 2, false, 0, EPROTO));
	/* new data frame inside a fragmented message */
	CHECK(rejects((const uint8_t[]){ 0x01, 0x01, 'a', 0x81, 0x01, 'b' }, 6, false, 0, EPROTO));
	CHECK(rejects((const uint8_t[]){ 0x02, 0x01, 'a', 0x02, 0x01, 'b' }, 6, false, 0, EPROTO));
	/* 64-bit length with the top bit set */
	CHECK(rejects((const uint8_t[]){ 0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 0 }, 10, false, 0, EPROTO));
	/* over the message cap: one frame, 64-bit form, and across fragments */
	CHECK(rejects((const uint8_t[]){ 0x82, 11 }, 2, false, 10, EMSGSIZE));
	CHECK(rejects((const uint8_t[]){ 0x82, 127, 0, 0, 0, 1, 0, 0, 0, 0 }, 10, false, 0, EMSGSIZE));
	CHECK(rejects((const uint8_t[]){ 0x02, 6, 'a', 'b', 'c', 'd', 'e', 'f', 0x80, 5 }, 10, false, 10, EMSGSIZE));
	/* a message exactly at the cap is fine */
	CHECK(!rejects((const uint8_t[]){ 0x82, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }, 12, false, 10, EMSGSIZE));
}

TEST(frame_default_cap_is_16mib)
{
	struct ws_decoder d;
	ws_decoder_init(&d, false, 0);
	CHECK_INT(d.max_message, 16 * 1024 * 1024);
	ws_decoder_free(&d);
	uint8_t hdr[WS_MAX_HEADER];
	size_t hl = ws_frame_header(hdr, WS_OP_TEXT, true, 16 * 1024 * 1024 + 1, NULL);
	CHECK(rejects(hdr, hl, false, 0, EMSGSIZE));
	hl = ws_frame_header(hdr, WS_OP_TEXT, true, 16 * 1024 * 1024, NULL);
	CHECK(!rejects(hdr, hl, false, 0, EMSGSIZE));
}
