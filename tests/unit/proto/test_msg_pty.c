/* SPAWN_PTY and RESIZE: both round-trip, every bound is rejected by the
 * decoder and refused by the encoder. */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "proto/proto_msg.h"

static char last_err[512];

/* Encodes m, decodes the frame into out; returns the first failure's
 * result (its message in last_err). */
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

static int decode_raw(uint8_t type, uint32_t stream, const struct proto_wbuf *p)
{
	struct proto_header h = { .length = (uint32_t)p->len, .stream = stream, .type = type };
	struct proto_msg m;
	sbx_error_t err = NULL;
	int rc = proto_msg_decode(&h, p->data, &m, &err);
	snprintf(last_err, sizeof(last_err), "%s", sbx_error_msg(err));
	sbx_error_free(&err);
	if (rc == 0)
		proto_msg_free(&m);
	return rc;
}

static void put_spawn_pty(struct proto_wbuf *p, char **argv, char **env, const char *cwd, uint32_t rows,
			  uint32_t cols)
{
	p->len = 0;
	proto_put_strv(p, argv);
	proto_put_strv(p, env);
	proto_put_str(p, cwd);
	proto_put_u32(p, rows);
	proto_put_u32(p, cols);
}

TEST(spawn_pty_roundtrip)
{
	char *argv[] = { "sh", "-i", NULL };
	char *env[] = { "TERM=xterm", NULL };
	struct proto_msg m = { .stream = 5, .type = PROTO_SPAWN_PTY };
	m.u.spawn_pty = (struct proto_spawn_pty){ argv, env, "/root", 24, 80 };
	struct proto_msg d;
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK_INT(d.type, PROTO_SPAWN_PTY);
	CHECK_INT(d.stream, 5);
	CHECK_STR(d.u.spawn_pty.argv[0], "sh");
	CHECK_STR(d.u.spawn_pty.argv[1], "-i");
	CHECK(d.u.spawn_pty.argv[2] == NULL);
	CHECK_STR(d.u.spawn_pty.env[0], "TERM=xterm");
	CHECK_STR(d.u.spawn_pty.cwd, "/root");
	CHECK_INT(d.u.spawn_pty.rows, 24);
	CHECK_INT(d.u.spawn_pty.cols, 80);
	proto_msg_free(&d);
	/* The extremes of the range. */
	m.u.spawn_pty.rows = 1;
	m.u.spawn_pty.cols = PROTO_MAX_TTY_DIM;
	m.u.spawn_pty.env = NULL; /* encoded as an empty vector */
	m.u.spawn_pty.cwd = NULL; /* encoded as "" */
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK_INT(d.u.spawn_pty.rows, 1);
	CHECK_INT(d.u.spawn_pty.cols, PROTO_MAX_TTY_DIM);
	CHECK(d.u.spawn_pty.env[0] == NULL);
	CHECK_STR(d.u.spawn_pty.cwd, "");
	proto_msg_free(&d);
}

TEST(resize_roundtrip)
{
	struct proto_msg m = { .stream = 5, .type = PROTO_RESIZE, .u.winsize = { 50, 132 } };
	struct proto_msg d;
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK_INT(d.type, PROTO_RESIZE);
	CHECK_INT(d.u.winsize.rows, 50);
	CHECK_INT(d.u.winsize.cols, 132);
	m.u.winsize = (struct proto_winsize){ PROTO_MAX_TTY_DIM, 1 };
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK_INT(d.u.winsize.rows, PROTO_MAX_TTY_DIM);
	CHECK_INT(d.u.winsize.cols, 1);
}

TEST(encoder_refuses_what_the_decoder_rejects)
{
	char *argv[] = { "sh", NULL }, *noargv[] = { NULL }, *emptyarg[] = { "", NULL };
	static const uint32_t bad[][2] = { { 0, 80 }, { 24, 0 }, { PROTO_MAX_TTY_DIM + 1, 80 },
					   { 24, PROTO_MAX_TTY_DIM + 1 }, { 0xffffffffu, 0xffffffffu } };
	struct proto_msg d;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct proto_msg m = { .stream = 1, .type = PROTO_SPAWN_PTY };
		m.u.spawn_pty = (struct proto_spawn_pty){ argv, NULL, "", bad[i][0], bad[i][1] };
		CHECK_INT(roundtrip(&m, &d), -1);
		CHECK(strstr(last_err, "terminal of") != NULL);
		m = (struct proto_msg){ .stream = 1, .type = PROTO_RESIZE, .u.winsize = { bad[i][0], bad[i][1] } };
		CHECK_INT(roundtrip(&m, &d), -1);
		CHECK(strstr(last_err, "terminal of") != NULL);
	}
	struct proto_msg m = { .stream = 1, .type = PROTO_SPAWN_PTY };
	m.u.spawn_pty = (struct proto_spawn_pty){ NULL, NULL, "", 24, 80 };
	CHECK_INT(roundtrip(&m, &d), -1);
	m.u.spawn_pty.argv = noargv;
	CHECK_INT(roundtrip(&m, &d), -1);
	m.u.spawn_pty.argv = emptyarg;
	CHECK_INT(roundtrip(&m, &d), -1);
	CHECK(strstr(last_err, "empty argv") != NULL);
}

TEST(spawn_pty_rejections)
{
	struct proto_wbuf p;
	proto_wbuf_init(&p);
	char *argv[] = { "sh", NULL }, *noargv[] = { NULL }, *emptyarg[] = { "", NULL };
	char *env[] = { "A=1", NULL }, *badenv[] = { "NOEQUALS", NULL }, *noname[] = { "=x", NULL };
	put_spawn_pty(&p, argv, env, "", 24, 80);
	CHECK_INT(decode_raw(PROTO_SPAWN_PTY, 1, &p), 0);
	/* On stream 0 it is not a stream's opener. */
	CHECK_INT(decode_raw(PROTO_SPAWN_PTY, 0, &p), -1);
	CHECK(strstr(last_err, "stream 0") != NULL);
	put_spawn_pty(&p, noargv, env, "", 24, 80);
	CHECK_INT(decode_raw(PROTO_SPAWN_PTY, 1, &p), -1);
	CHECK(strstr(last_err, "empty argv") != NULL);
	put_spawn_pty(&p, emptyarg, env, "", 24, 80);
	CHECK_INT(decode_raw(PROTO_SPAWN_PTY, 1, &p), -1);
	CHECK(strstr(last_err, "empty argv") != NULL);
	put_spawn_pty(&p, argv, badenv, "", 24, 80);
	CHECK_INT(decode_raw(PROTO_SPAWN_PTY, 1, &p), -1);
	CHECK(strstr(last_err, "KEY=VALUE") != NULL);
	put_spawn_pty(&p, argv, noname, "", 24, 80);
	CHECK_INT(decode_raw(PROTO_SPAWN_PTY, 1, &p), -1);
	CHECK(strstr(last_err, "KEY=VALUE") != NULL);
	put_spawn_pty(&p, argv, env, "relative", 24, 80);
	CHECK_INT(decode_raw(PROTO_SPAWN_PTY, 1, &p), -1);
	CHECK(strstr(last_err, "absolute") != NULL);
	static const struct {
		uint32_t rows, cols;
		const char *why;
	} dims[] = {
		{ 0, 80, "rows 0" },
		{ PROTO_MAX_TTY_DIM + 1, 80, "rows 1001" },
		{ 24, 0, "cols 0" },
		{ 24, PROTO_MAX_TTY_DIM + 1, "cols 1001" },
		{ 0xffffffffu, 80, "rows 4294967295" },
	};
	for (size_t i = 0; i < sizeof(dims) / sizeof(dims[0]); i++) {
		put_spawn_pty(&p, argv, env, "", dims[i].rows, dims[i].cols);
		CHECK_INT(decode_raw(PROTO_SPAWN_PTY, 1, &p), -1);
		CHECK(strstr(last_err, dims[i].why) != NULL);
	}
	/* Missing cols, missing both, one byte too many. */
	put_spawn_pty(&p, argv, env, "", 24, 80);
	p.len -= 4;
	CHECK_INT(decode_raw(PROTO_SPAWN_PTY, 1, &p), -1);
	CHECK(strstr(last_err, "cols") != NULL);
	p.len -= 4;
	CHECK_INT(decode_raw(PROTO_SPAWN_PTY, 1, &p), -1);
	CHECK(strstr(last_err, "rows") != NULL);
	put_spawn_pty(&p, argv, env, "", 24, 80);
	proto_put_bytes(&p, "x", 1);
	CHECK_INT(decode_raw(PROTO_SPAWN_PTY, 1, &p), -1);
	CHECK(strstr(last_err, "trailing") != NULL);
	/* An argv count above the cap is refused before it is read. */
	p.len = 0;
	proto_put_u32(&p, PROTO_MAX_STRV + 1);
	CHECK_INT(decode_raw(PROTO_SPAWN_PTY, 1, &p), -1);
	CHECK(strstr(last_err, "exceeds") != NULL);
	proto_wbuf_free(&p);
}

TEST(resize_rejections)
{
	struct proto_wbuf p;
	proto_wbuf_init(&p);
	static const struct {
		uint32_t rows, cols;
		int ok;
	} cases[] = {
		{ 1, 1, 1 }, { PROTO_MAX_TTY_DIM, PROTO_MAX_TTY_DIM, 1 }, { 0, 1, 0 }, { 1, 0, 0 },
		{ PROTO_MAX_TTY_DIM + 1, 1, 0 }, { 1, PROTO_MAX_TTY_DIM + 1, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		p.len = 0;
		proto_put_u32(&p, cases[i].rows);
		proto_put_u32(&p, cases[i].cols);
		CHECK_INT(decode_raw(PROTO_RESIZE, 3, &p), cases[i].ok ? 0 : -1);
		if (!cases[i].ok)
			CHECK(strstr(last_err, "out of range 1..1000") != NULL);
	}
	p.len = 0;
	proto_put_u32(&p, 24);
	proto_put_u32(&p, 80);
	CHECK_INT(decode_raw(PROTO_RESIZE, 0, &p), -1);
	CHECK(strstr(last_err, "stream 0") != NULL);
	p.len = 4;
	CHECK_INT(decode_raw(PROTO_RESIZE, 3, &p), -1);
	CHECK(strstr(last_err, "cols") != NULL);
	p.len = 0;
	CHECK_INT(decode_raw(PROTO_RESIZE, 3, &p), -1);
	CHECK(strstr(last_err, "rows") != NULL);
	p.len = 0;
	for (int i = 0; i < 3; i++)
		proto_put_u32(&p, 24);
	CHECK_INT(decode_raw(PROTO_RESIZE, 3, &p), -1);
	CHECK(strstr(last_err, "trailing") != NULL);
	proto_wbuf_free(&p);
}

TEST(names)
{
	CHECK_STR(proto_type_name(PROTO_SPAWN_PTY), "SPAWN_PTY");
	CHECK_STR(proto_type_name(PROTO_RESIZE), "RESIZE");
}
