/* Field codec, header codec and the incremental frame reader. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "proto/proto.h"
#include "proto/proto_reader.h"

TEST(header_roundtrip_is_big_endian)
{
	struct proto_header h = { .length = 0x01020304u & 0xfffffu, .stream = 0xa0b0c0d0u, .type = PROTO_SPAWN };
	uint8_t b[PROTO_HEADER_SIZE];
	proto_header_encode(&h, b);
	CHECK_INT(b[0], 0x00);
	CHECK_INT(b[1], 0x02);
	CHECK_INT(b[3], 0x04);
	CHECK_INT(b[4], 0xa0);
	CHECK_INT(b[7], 0xd0);
	CHECK_INT(b[8], PROTO_SPAWN);
	struct proto_header d;
	sbx_error_t err = NULL;
	CHECK_INT(proto_header_decode(b, &d, &err), 0);
	CHECK_INT(d.length, h.length);
	CHECK_INT(d.stream, h.stream);
	CHECK_INT(d.type, PROTO_SPAWN);
}

TEST(header_rejects_oversize_length)
{
	uint8_t b[PROTO_HEADER_SIZE];
	struct proto_header h = { .length = PROTO_MAX_PAYLOAD, .stream = 1, .type = PROTO_STDIN };
	struct proto_header d;
	sbx_error_t err = NULL;
	proto_header_encode(&h, b);
	CHECK_INT(proto_header_decode(b, &d, &err), 0);
	h.length = PROTO_MAX_PAYLOAD + 1;
	proto_header_encode(&h, b);
	CHECK_INT(proto_header_decode(b, &d, &err), -1);
	CHECK(strstr(sbx_error_msg(err), "exceeds") != NULL);
	sbx_error_free(&err);
	memset(b, 0xff, sizeof(b));
	CHECK_INT(proto_header_decode(b, &d, &err), -1);
	sbx_error_free(&err);
}

TEST(header_rejects_unknown_type)
{
	uint8_t b[PROTO_HEADER_SIZE] = { 0 };
	struct proto_header d;
	sbx_error_t err = NULL;
	const uint8_t bad[] = { 0x00, 0x09, 0x0f, 0x1c, 0x3f, 0x60, 0xff };
	for (size_t i = 0; i < sizeof(bad); i++) {
		b[8] = bad[i];
		CHECK_INT(proto_header_decode(b, &d, &err), -1);
		CHECK(strstr(sbx_error_msg(err), "unknown frame type") != NULL);
		sbx_error_free(&err);
	}
	b[8] = PROTO_FS_FIRST;
	CHECK_INT(proto_header_decode(b, &d, &err), 0);
	b[8] = PROTO_SPAWN_PTY;
	CHECK_INT(proto_header_decode(b, &d, &err), 0);
	b[8] = PROTO_RESIZE;
	CHECK_INT(proto_header_decode(b, &d, &err), 0);
}

TEST(fields_roundtrip)
{
	struct proto_wbuf w;
	proto_wbuf_init(&w);
	proto_put_u32(&w, 0xdeadbeefu);
	proto_put_i32(&w, -5);
	proto_put_u64(&w, 0x0102030405060708ull);
	proto_put_str(&w, "héllo");
	char *v[] = { "a", "", "ccc", NULL };
	proto_put_strv(&w, v);
	proto_put_strn(&w, "x\0y", 3);
	CHECK(!w.failed);

	struct proto_rbuf r;
	sbx_error_t err = NULL;
	uint32_t u;
	int32_t i;
	uint64_t q;
	char *s = NULL, **sv = NULL;
	proto_rbuf_init(&r, w.data, w.len);
	CHECK_INT(proto_get_u32(&r, &u, &err), 0);
	CHECK_INT(u, 0xdeadbeefu);
	CHECK_INT(proto_get_i32(&r, &i, &err), 0);
	CHECK_INT(i, -5);
	CHECK_INT(proto_get_u64(&r, &q, &err), 0);
	CHECK(q == 0x0102030405060708ull);
	CHECK_INT(proto_get_str(&r, &s, &err), 0);
	CHECK_STR(s, "héllo");
	free(s);
	CHECK_INT(proto_get_strv(&r, &sv, &err), 0);
	CHECK_STR(sv[0], "a");
	CHECK_STR(sv[1], "");
	CHECK_STR(sv[2], "ccc");
	CHECK(sv[3] == NULL);
	sbx_strv_free(sv);
	/* The last string holds a NUL: a str reader refuses it, a blob reader
	 * takes it. */
	size_t mark = r.off;
	CHECK_INT(proto_get_str(&r, &s, &err), -1);
	CHECK(strstr(sbx_error_msg(err), "NUL") != NULL);
	sbx_error_free(&err);
	r.off = mark;
	uint8_t *blob = NULL;
	size_t n = 0;
	CHECK_INT(proto_get_blob(&r, &blob, &n, 16, &err), 0);
	CHECK_INT(n, 3);
	CHECK(memcmp(blob, "x\0y", 3) == 0);
	free(blob);
	CHECK_INT(proto_get_end(&r, &err), 0);
	proto_wbuf_free(&w);
}

TEST(truncated_fields_are_rejected)
{
	const uint8_t b[] = { 0, 0, 0, 5, 'a', 'b' };
	struct proto_rbuf r;
	sbx_error_t err = NULL;
	uint32_t u;
	uint64_t q;
	char *s = NULL;
	proto_rbuf_init(&r, b, 3);
	CHECK_INT(proto_get_u32(&r, &u, &err), -1);
	CHECK(strstr(sbx_error_msg(err), "truncated") != NULL);
	sbx_error_free(&err);
	proto_rbuf_init(&r, b, 6);
	CHECK_INT(proto_get_u64(&r, &q, &err), -1);
	sbx_error_free(&err);
	CHECK_INT(proto_get_str(&r, &s, &err), -1);
	CHECK(s == NULL);
	sbx_error_free(&err);
	proto_rbuf_init(&r, b, 6);
	CHECK_INT(proto_get_u32(&r, &u, &err), 0);
	CHECK_INT(proto_get_end(&r, &err), -1);
	CHECK(strstr(sbx_error_msg(err), "2 trailing bytes") != NULL);
	sbx_error_free(&err);
}

TEST(oversize_string_and_count_are_rejected)
{
	struct proto_wbuf w;
	proto_wbuf_init(&w);
	proto_put_u32(&w, PROTO_MAX_STR + 1);
	struct proto_rbuf r;
	sbx_error_t err = NULL;
	char *s = NULL, **v = NULL;
	proto_rbuf_init(&r, w.data, w.len);
	CHECK_INT(proto_get_str(&r, &s, &err), -1);
	CHECK(strstr(sbx_error_msg(err), "exceeds") != NULL);
	sbx_error_free(&err);
	proto_rbuf_init(&r, w.data, w.len);
	CHECK_INT(proto_get_strv(&r, &v, &err), -1);
	CHECK(strstr(sbx_error_msg(err), "exceeds") != NULL);
	sbx_error_free(&err);
	/* A count within the cap that the payload cannot hold. */
	w.len = 0;
	proto_put_u32(&w, 100);
	proto_put_u32(&w, 0);
	proto_rbuf_init(&r, w.data, w.len);
	CHECK_INT(proto_get_strv(&r, &v, &err), -1);
	CHECK(v == NULL);
	sbx_error_free(&err);
	proto_wbuf_free(&w);
}

TEST(writer_refuses_oversize_instead_of_truncating)
{
	struct proto_wbuf w, f;
	sbx_error_t err = NULL;
	proto_wbuf_init(&w);
	proto_wbuf_init(&f);
	char *big = malloc(PROTO_MAX_STR + 2);
	CHECK(big != NULL);
	memset(big, 'a', PROTO_MAX_STR + 1);
	big[PROTO_MAX_STR + 1] = '\0';
	proto_put_str(&w, big);
	free(big);
	CHECK(w.failed);
	CHECK_INT(proto_frame(&f, 1, PROTO_ERROR, &w, &err), -1);
	sbx_error_free(&err);
	proto_wbuf_free(&w);

	uint8_t *chunk = calloc(1, PROTO_MAX_PAYLOAD + 1);
	CHECK(chunk != NULL);
	proto_put_bytes(&w, chunk, PROTO_MAX_PAYLOAD + 1);
	free(chunk);
	CHECK_INT(proto_frame(&f, 1, PROTO_STDOUT, &w, &err), -1);
	sbx_error_free(&err);
	proto_wbuf_free(&w);
	proto_wbuf_free(&f);
}

TEST(frame_and_reader_byte_by_byte)
{
	struct proto_wbuf p, f;
	sbx_error_t err = NULL;
	proto_wbuf_init(&p);
	proto_wbuf_init(&f);
	proto_put_bytes(&p, "hello", 5);
	CHECK_INT(proto_frame(&f, 7, PROTO_STDOUT, &p, &err), 0);
	CHECK_INT(f.len, PROTO_HEADER_SIZE + 5);
	/* Append an empty frame to check back-to-back frames. */
	struct proto_wbuf f2;
	proto_wbuf_init(&f2);
	CHECK_INT(proto_frame(&f2, 7, PROTO_STDIN_EOF, NULL, &err), 0);
	proto_put_bytes(&f, f2.data, f2.len);

	struct proto_reader rd;
	proto_reader_init(&rd);
	struct proto_header h;
	const uint8_t *payload = NULL;
	int frames = 0;
	for (size_t i = 0; i < f.len; i++) {
		size_t used = 0;
		int rc = proto_reader_feed(&rd, f.data + i, 1, &used, &h, &payload, &err);
		CHECK(rc >= 0);
		CHECK_INT(used, 1);
		if (rc == 1) {
			frames++;
			if (frames == 1) {
				CHECK_INT(h.type, PROTO_STDOUT);
				CHECK_INT(h.stream, 7);
				CHECK(memcmp(payload, "hello", 5) == 0);
			} else {
				CHECK_INT(h.type, PROTO_STDIN_EOF);
				CHECK_INT(h.length, 0);
			}
		}
	}
	CHECK_INT(frames, 2);
	proto_reader_free(&rd);
	proto_wbuf_free(&p);
	proto_wbuf_free(&f);
	proto_wbuf_free(&f2);
}

TEST(reader_stops_at_frame_end_and_rejects_bad_header)
{
	struct proto_wbuf f;
	sbx_error_t err = NULL;
	proto_wbuf_init(&f);
	struct proto_wbuf one;
	proto_wbuf_init(&one);
	CHECK_INT(proto_frame(&one, 0, PROTO_READY, NULL, &err), 0);
	proto_put_bytes(&f, one.data, one.len);
	proto_put_bytes(&f, one.data, one.len);
	proto_wbuf_free(&one);
	struct proto_reader rd;
	proto_reader_init(&rd);
	struct proto_header h;
	const uint8_t *payload;
	size_t used;
	CHECK_INT(proto_reader_feed(&rd, f.data, f.len, &used, &h, &payload, &err), 1);
	CHECK_INT(used, PROTO_HEADER_SIZE);
	CHECK_INT(proto_reader_feed(&rd, f.data + used, f.len - used, &used, &h, &payload, &err), 1);
	CHECK_INT(used, PROTO_HEADER_SIZE);

	uint8_t bad[PROTO_HEADER_SIZE] = { 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 1, PROTO_STDIN };
	CHECK_INT(proto_reader_feed(&rd, bad, sizeof(bad), &used, &h, &payload, &err), -1);
	CHECK(strstr(sbx_error_msg(err), "exceeds") != NULL);
	sbx_error_free(&err);
	proto_reader_free(&rd);
	proto_wbuf_free(&f);
}
