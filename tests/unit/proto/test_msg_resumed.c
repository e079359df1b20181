/* RESUMED (proto.h): round-trips, is bounded on both sides (entropy of
 * PROTO_MIN_RESUMED_ENTROPY..PROTO_MAX_ENTROPY bytes, stream 0 only, no
 * trailing bytes) and is a known frame type. */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "proto/proto_msg.h"

static char last_err[512];

/* Encodes m and decodes the frame into out; the first failure's message
 * goes to last_err. */
static int roundtrip(const struct proto_msg *m, struct proto_msg *out)
{
	struct proto_wbuf f;
	sbx_error_t err = NULL;
	proto_wbuf_init(&f);
	int rc = proto_msg_encode(&f, m, &err);
	struct proto_header h;
	if (rc == 0)
		rc = proto_header_decode(f.data, &h, &err);
	if (rc == 0)
		rc = proto_msg_decode(&h, f.data + PROTO_HEADER_SIZE, out, &err);
	snprintf(last_err, sizeof(last_err), "%s", sbx_error_msg(err));
	sbx_error_free(&err);
	proto_wbuf_free(&f);
	return rc;
}

static int decode_raw(uint32_t stream, const struct proto_wbuf *p)
{
	struct proto_header h = { .length = (uint32_t)p->len, .stream = stream, .type = PROTO_RESUMED };
	struct proto_msg m;
	sbx_error_t err = NULL;
	int rc = proto_msg_decode(&h, p->data, &m, &err);
	snprintf(last_err, sizeof(last_err), "%s", sbx_error_msg(err));
	sbx_error_free(&err);
	if (rc == 0)
		proto_msg_free(&m);
	return rc;
}

static void put_resumed(struct proto_wbuf *p, uint64_t ns, const uint8_t *e, size_t n)
{
	p->len = 0;
	proto_put_u64(p, ns);
	proto_put_u32(p, (uint32_t)n);
	proto_put_bytes(p, e, n);
}

TEST(resumed_roundtrip)
{
	uint8_t entropy[48];
	for (size_t i = 0; i < sizeof(entropy); i++)
		entropy[i] = (uint8_t)(i * 7 + 1);
	struct proto_msg m = { .stream = 0, .type = PROTO_RESUMED };
	m.u.resumed = (struct proto_resumed){ 1764800000123456789ull, entropy, sizeof(entropy) };
	struct proto_msg d;
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK_INT(d.type, PROTO_RESUMED);
	CHECK(d.u.resumed.realtime_ns == 1764800000123456789ull);
	CHECK_INT(d.u.resumed.entropy_len, sizeof(entropy));
	CHECK(memcmp(d.u.resumed.entropy, entropy, sizeof(entropy)) == 0);
	CHECK_STR(proto_type_name(PROTO_RESUMED), "RESUMED");
	proto_msg_free(&d);
}

TEST(resumed_encoder_bounds)
{
	uint8_t entropy[PROTO_MAX_ENTROPY + 1];
	memset(entropy, 0x5a, sizeof(entropy));
	struct proto_msg m = { .stream = 0, .type = PROTO_RESUMED };
	struct proto_msg d;
	m.u.resumed = (struct proto_resumed){ 1, entropy, PROTO_MIN_RESUMED_ENTROPY - 1 };
	CHECK_INT(roundtrip(&m, &d), -1);
	CHECK(strstr(last_err, "entropy") != NULL);
	m.u.resumed.entropy_len = PROTO_MAX_ENTROPY + 1;
	CHECK_INT(roundtrip(&m, &d), -1);
	m.u.resumed.entropy_len = PROTO_MAX_ENTROPY;
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK_INT(d.u.resumed.entropy_len, PROTO_MAX_ENTROPY);
	proto_msg_free(&d);
	m.u.resumed.entropy_len = PROTO_MIN_RESUMED_ENTROPY;
	CHECK_INT(roundtrip(&m, &d), 0);
	proto_msg_free(&d);
}

TEST(resumed_decoder_bounds)
{
	uint8_t entropy[PROTO_MAX_ENTROPY + 1];
	memset(entropy, 0xa5, sizeof(entropy));
	struct proto_wbuf p;
	proto_wbuf_init(&p);
	CHECK_INT(decode_raw(0, &p), -1); /* empty: realtime_ns missing */
	put_resumed(&p, 5, entropy, PROTO_MIN_RESUMED_ENTROPY);
	CHECK_INT(decode_raw(0, &p), 0);
	CHECK_INT(decode_raw(7, &p), -1); /* a VM-wide message on a stream */
	proto_put_u32(&p, 0);
	CHECK_INT(decode_raw(0, &p), -1); /* trailing bytes */
	put_resumed(&p, 5, entropy, PROTO_MIN_RESUMED_ENTROPY - 1);
	CHECK_INT(decode_raw(0, &p), -1);
	CHECK(strstr(last_err, "at least") != NULL);
	put_resumed(&p, 5, entropy, PROTO_MAX_ENTROPY);
	CHECK_INT(decode_raw(0, &p), 0);
	put_resumed(&p, 5, entropy, PROTO_MAX_ENTROPY + 1);
	CHECK_INT(decode_raw(0, &p), -1);
	/* a length that claims more than the payload holds */
	p.len = 0;
	proto_put_u64(&p, 5);
	proto_put_u32(&p, 64);
	proto_put_bytes(&p, entropy, 10);
	CHECK_INT(decode_raw(0, &p), -1);
	proto_wbuf_free(&p);
}

/* A reader takes the frame type (an unknown one is a framing error). */
TEST(resumed_header_known)
{
	uint8_t hdr[PROTO_HEADER_SIZE];
	struct proto_header h = { .length = 40, .stream = 0, .type = PROTO_RESUMED };
	proto_header_encode(&h, hdr);
	struct proto_header back;
	sbx_error_t err = NULL;
	CHECK_INT(proto_header_decode(hdr, &back, &err), 0);
	CHECK_INT(back.type, PROTO_RESUMED);
	sbx_error_free(&err);
}

