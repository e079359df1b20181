/* Message encoders/decoders: every message round-trips, every malformed
 * payload is rejected. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "proto/proto_msg.h"

/* Encodes m, decodes the frame into out; returns the decode result. */
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
	sbx_error_free(&err);
	proto_wbuf_free(&f);
	return rc;
}

/* Decodes a raw payload; returns the error message ("" on success). */
static char last_err[512];
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

TEST(config_roundtrip_with_binary_entropy)
{
	char *env[] = { "PATH=/usr/bin:/bin", "A=", NULL };
	uint8_t entropy[PROTO_MAX_ENTROPY];
	for (size_t i = 0; i < sizeof(entropy); i++)
		entropy[i] = (uint8_t)i; /* includes NULs */
	struct proto_msg m = { .stream = 0, .type = PROTO_CONFIG };
	struct proto_share shares[] = { { "sbxfs0", "/run/iii/config", PROTO_SHARE_RO }, { "sbxfs1", "/mnt/x", 0 } };
	m.u.config = (struct proto_config){ "box", env, 1ull << 30, 4096, 1700000000123456789ull, entropy,
					    sizeof(entropy), "www-data:1234", 0x0a00020f, 24, 0x0a000202, 0x0a000203, 1024,
					    shares, 2 };
	struct proto_msg d;
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK_STR(d.u.config.user, "www-data:1234");
	CHECK_STR(d.u.config.hostname, "box");
	CHECK_STR(d.u.config.env[0], "PATH=/usr/bin:/bin");
	CHECK_STR(d.u.config.env[1], "A=");
	CHECK(d.u.config.env[2] == NULL);
	CHECK(d.u.config.memory_bytes == 1ull << 30);
	CHECK(d.u.config.nofile == 4096);
	CHECK(d.u.config.realtime_ns == 1700000000123456789ull);
	CHECK_INT(d.u.config.entropy_len, sizeof(entropy));
	CHECK(memcmp(d.u.config.entropy, entropy, sizeof(entropy)) == 0);
	CHECK(d.u.config.net_addr == 0x0a00020f && d.u.config.net_prefix == 24);
	CHECK(d.u.config.net_gateway == 0x0a000202 && d.u.config.net_dns == 0x0a000203);
	CHECK_INT(d.u.config.pids_max, 1024);
	CHECK_INT(d.u.config.n_shares, 2);
	CHECK_STR(d.u.config.shares[0].tag, "sbxfs0");
	CHECK_STR(d.u.config.shares[0].path, "/run/iii/config");
	CHECK_INT(d.u.config.shares[0].flags, PROTO_SHARE_RO);
	CHECK_STR(d.u.config.shares[1].path, "/mnt/x");
	CHECK_INT(d.u.config.shares[1].flags, 0);
	proto_msg_free(&d);
}

/* A CONFIG's fixed fields up to pids_max, for the share checks. */
static void put_config_head(struct proto_wbuf *p)
{
	char *env[] = { NULL };
	proto_put_str(p, "h");
	proto_put_strv(p, env);
	proto_put_u64(p, 0);
	proto_put_u64(p, 0);
	proto_put_u64(p, 0);
	proto_put_u32(p, 0);
	proto_put_str(p, "");
	for (int i = 0; i < 5; i++)
		proto_put_u32(p, 0);
}

TEST(config_share_rejections)
{
	static const struct {
		uint32_t n;
		const char *tag, *path;
		uint32_t flags;
		const char *why;
	} cases[] = {
		{ PROTO_MAX_SHARES + 1, "t", "/a", 0, "shares" },
		{ 1, "", "/a", 0, "tag" },
		{ 1, "0123456789012345678901234567890123456", "/a", 0, "tag" }, /* 37 bytes */
		{ 1, "t", "", 0, "path" },
		{ 1, "t", "relative", 0, "absolute" },
		{ 1, "t", "/a", 2, "flags" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct proto_wbuf p;
		proto_wbuf_init(&p);
		put_config_head(&p);
		proto_put_u32(&p, cases[i].n);
		proto_put_str(&p, cases[i].tag);
		proto_put_str(&p, cases[i].path);
		proto_put_u32(&p, cases[i].flags);
		CHECK_INT(decode_raw(PROTO_CONFIG, 0, &p), -1);
		CHECK(strstr(last_err, cases[i].why) != NULL);
		proto_wbuf_free(&p);
	}
	/* A count above the entries that follow is incomplete. */
	struct proto_wbuf p;
	proto_wbuf_init(&p);
	put_config_head(&p);
	proto_put_u32(&p, 2);
	proto_put_str(&p, "t");
	proto_put_str(&p, "/a");
	proto_put_u32(&p, PROTO_SHARE_RO);
	CHECK_INT(decode_raw(PROTO_CONFIG, 0, &p), -1);
	proto_wbuf_free(&p);

	/* The encoder refuses what the decoder would. */
	char *env[] = { NULL };
	struct proto_share bad[] = { { "t", "relative", 0 } };
	struct proto_msg m = { .stream = 0, .type = PROTO_CONFIG };
	m.u.config = (struct proto_config){ .hostname = "h", .env = env, .shares = bad, .n_shares = 1 };
	struct proto_wbuf out;
	proto_wbuf_init(&out);
	sbx_error_t err = NULL;
	CHECK_INT(proto_msg_encode(&out, &m, &err), -1);
	sbx_error_free(&err);
	proto_wbuf_free(&out);
}

TEST(config_rejects_a_network_prefix_above_32)
{
	char *env[] = { NULL };
	struct proto_msg m = { .stream = 0, .type = PROTO_CONFIG };
	m.u.config = (struct proto_config){ .hostname = "h", .env = env, .net_addr = 1, .net_prefix = 33 };
	struct proto_msg d;
	CHECK(roundtrip(&m, &d) < 0);
}

TEST(config_user_defaults_to_root_and_is_capped)
{
	char *env[] = { NULL };
	struct proto_msg m = { .stream = 0, .type = PROTO_CONFIG };
	m.u.config = (struct proto_config){ .hostname = "h", .env = env };
	struct proto_msg d;
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK_STR(d.u.config.user, "");
	proto_msg_free(&d);

	char user[PROTO_MAX_USER + 2];
	memset(user, 'u', sizeof(user) - 1);
	user[sizeof(user) - 1] = '\0';
	m.u.config.user = user;
	struct proto_wbuf out;
	proto_wbuf_init(&out);
	sbx_error_t err = NULL;
	CHECK_INT(proto_msg_encode(&out, &m, &err), -1);
	CHECK(strstr(sbx_error_msg(err), "user") != NULL);
	sbx_error_free(&err);
	proto_wbuf_free(&out);

	/* The decoder enforces the cap too (a hostile host or a bad build). */
	struct proto_wbuf p;
	proto_wbuf_init(&p);
	proto_put_str(&p, "h");
	proto_put_strv(&p, env);
	proto_put_u64(&p, 0);
	proto_put_u64(&p, 0);
	proto_put_u64(&p, 0);
	proto_put_u32(&p, 0);
	proto_put_str(&p, user);
	CHECK_INT(decode_raw(PROTO_CONFIG, 0, &p), -1);
	CHECK(strstr(last_err, "user") != NULL);
	/* A CONFIG without the user field (an older host) is incomplete. */
	p.len = 0;
	proto_put_str(&p, "h");
	proto_put_strv(&p, env);
	proto_put_u64(&p, 0);
	proto_put_u64(&p, 0);
	proto_put_u64(&p, 0);
	proto_put_u32(&p, 0);
	CHECK_INT(decode_raw(PROTO_CONFIG, 0, &p), -1);
	user[PROTO_MAX_USER] = '\0';
	proto_put_str(&p, user);
	/* nor one without the network fields */
	CHECK_INT(decode_raw(PROTO_CONFIG, 0, &p), -1);
	for (int i = 0; i < 4; i++)
		proto_put_u32(&p, 0);
	/* nor one without pids_max */
	CHECK_INT(decode_raw(PROTO_CONFIG, 0, &p), -1);
	proto_put_u32(&p, 0);
	/* nor one without the shares */
	CHECK_INT(decode_raw(PROTO_CONFIG, 0, &p), -1);
	proto_put_u32(&p, 0);
	CHECK_INT(decode_raw(PROTO_CONFIG, 0, &p), 0);
	proto_wbuf_free(&p);
}

TEST(spawn_roundtrip)
{
	char *argv[] = { "sh", "-c", "echo hi", NULL };
	char *env[] = { "X=1", NULL };
	struct proto_msg m = { .stream = 42, .type = PROTO_SPAWN };
	m.u.spawn = (struct proto_spawn){ argv, env, "/tmp", PROTO_SPAWN_STDIN };
	struct proto_msg d;
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK_INT(d.stream, 42);
	CHECK_STR(d.u.spawn.argv[2], "echo hi");
	CHECK(d.u.spawn.argv[3] == NULL);
	CHECK_STR(d.u.spawn.env[0], "X=1");
	CHECK_STR(d.u.spawn.cwd, "/tmp");
	CHECK_INT(d.u.spawn.flags, PROTO_SPAWN_STDIN);
	proto_msg_free(&d);
}

TEST(scalar_messages_roundtrip)
{
	struct proto_msg m, d;
	m = (struct proto_msg){ .stream = 0, .type = PROTO_HELLO, .u.version = PROTO_VERSION };
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK_INT(d.u.version, PROTO_VERSION);
	m = (struct proto_msg){ .stream = 0, .type = PROTO_PING, .u.nonce = 0xfedcba9876543210ull };
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK(d.u.nonce == 0xfedcba9876543210ull);
	m.type = PROTO_PONG;
	CHECK_INT(roundtrip(&m, &d), 0);
	m = (struct proto_msg){ .stream = 0, .type = PROTO_READY };
	CHECK_INT(roundtrip(&m, &d), 0);
	m.type = PROTO_SHUTDOWN;
	CHECK_INT(roundtrip(&m, &d), 0);
	m.type = PROTO_WARM_UP; /* no argv: `true` only */
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK_INT(d.type, PROTO_WARM_UP);
	CHECK(d.u.warm_up != NULL && d.u.warm_up[0] == NULL);
	proto_msg_free(&d);
	m = (struct proto_msg){ .stream = 3, .type = PROTO_STARTED, .u.pid = 1234 };
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK_INT(d.u.pid, 1234);
	m = (struct proto_msg){ .stream = 3, .type = PROTO_CREDIT, .u.credit = PROTO_WINDOW };
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK_INT(d.u.credit, PROTO_WINDOW);
	m = (struct proto_msg){ .stream = 3, .type = PROTO_KILL, .u.signal = 9 };
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK_INT(d.u.signal, 9);
	m = (struct proto_msg){ .stream = 3, .type = PROTO_EXIT, .u.code = 137 };
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK_INT(d.u.code, 137);
	m = (struct proto_msg){ .stream = 3, .type = PROTO_STDIN_EOF };
	CHECK_INT(roundtrip(&m, &d), 0);
	m = (struct proto_msg){ .stream = 3, .type = PROTO_ERROR, .u.message = "boom" };
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK_STR(d.u.message, "boom");
	proto_msg_free(&d);
	m.stream = 0; /* boot failures are reported on stream 0 */
	CHECK_INT(roundtrip(&m, &d), 0);
	proto_msg_free(&d);
}

TEST(data_roundtrip_and_chunk_cap)
{
	static uint8_t buf[PROTO_MAX_CHUNK + 1];
	memset(buf, 'z', sizeof(buf));
	struct proto_msg m = { .stream = 9, .type = PROTO_STDOUT };
	m.u.data = (struct proto_data){ buf, PROTO_MAX_CHUNK };
	struct proto_msg d;
	/* The decoded data borrows from the frame, so decode by hand here. */
	struct proto_wbuf f;
	sbx_error_t err = NULL;
	proto_wbuf_init(&f);
	CHECK_INT(proto_msg_encode(&f, &m, &err), 0);
	struct proto_header h;
	CHECK_INT(proto_header_decode(f.data, &h, &err), 0);
	CHECK_INT(proto_msg_decode(&h, f.data + PROTO_HEADER_SIZE, &d, &err), 0);
	CHECK_INT(d.u.data.len, PROTO_MAX_CHUNK);
	CHECK(memcmp(d.u.data.data, buf, PROTO_MAX_CHUNK) == 0);
	m.u.data.len = PROTO_MAX_CHUNK + 1;
	CHECK_INT(proto_msg_encode(&f, &m, &err), -1);
	sbx_error_free(&err);
	proto_wbuf_free(&f);

	struct proto_wbuf p;
	proto_wbuf_init(&p);
	proto_put_bytes(&p, buf, sizeof(buf));
	CHECK_INT(decode_raw(PROTO_STDIN, 9, &p), -1);
	CHECK(strstr(last_err, "exceeds") != NULL);
	proto_wbuf_free(&p);
}

TEST(wrong_stream_is_rejected)
{
	struct proto_wbuf p;
	proto_wbuf_init(&p);
	proto_put_u64(&p, 1);
	CHECK_INT(decode_raw(PROTO_PING, 5, &p), -1);
	CHECK(strstr(last_err, "expected 0") != NULL);
	p.len = 0;
	CHECK_INT(decode_raw(PROTO_STDIN_EOF, 0, &p), -1);
	CHECK(strstr(last_err, "stream 0") != NULL);
	proto_wbuf_free(&p);
}

TEST(trailing_and_missing_bytes_are_rejected)
{
	struct proto_wbuf p;
	proto_wbuf_init(&p);
	proto_put_u32(&p, 1);
	proto_put_u32(&p, 2);
	CHECK_INT(decode_raw(PROTO_HELLO, 0, &p), -1);
	CHECK(strstr(last_err, "trailing") != NULL);
	CHECK_INT(decode_raw(PROTO_READY, 0, &p), -1);
	p.len = 2;
	CHECK_INT(decode_raw(PROTO_CREDIT, 1, &p), -1);
	CHECK(strstr(last_err, "truncated") != NULL);
	proto_wbuf_free(&p);
}

static void put_spawn(struct proto_wbuf *p, char **argv, char **env, const char *cwd, uint32_t flags)
{
	p->len = 0;
	proto_put_strv(p, argv);
	proto_put_strv(p, env);
	proto_put_str(p, cwd);
	proto_put_u32(p, flags);
}

TEST(spawn_rejections)
{
	struct proto_wbuf p;
	proto_wbuf_init(&p);
	char *argv[] = { "ls", NULL }, *noargv[] = { NULL }, *emptyarg[] = { "", NULL };
	char *env[] = { "A=1", NULL }, *badenv[] = { "NOEQUALS", NULL }, *noname[] = { "=x", NULL };
	put_spawn(&p, argv, env, "", 0);
	CHECK_INT(decode_raw(PROTO_SPAWN, 1, &p), 0);
	put_spawn(&p, noargv, env, "", 0);
	CHECK_INT(decode_raw(PROTO_SPAWN, 1, &p), -1);
	CHECK(strstr(last_err, "empty argv") != NULL);
	put_spawn(&p, emptyarg, env, "", 0);
	CHECK_INT(decode_raw(PROTO_SPAWN, 1, &p), -1);
	put_spawn(&p, argv, badenv, "", 0);
	CHECK_INT(decode_raw(PROTO_SPAWN, 1, &p), -1);
	CHECK(strstr(last_err, "KEY=VALUE") != NULL);
	put_spawn(&p, argv, noname, "", 0);
	CHECK_INT(decode_raw(PROTO_SPAWN, 1, &p), -1);
	put_spawn(&p, argv, env, "relative", 0);
	CHECK_INT(decode_raw(PROTO_SPAWN, 1, &p), -1);
	put_spawn(&p, argv, env, "/", 0x80);
	CHECK_INT(decode_raw(PROTO_SPAWN, 1, &p), -1);
	CHECK(strstr(last_err, "flags") != NULL);
	/* Argument with an embedded NUL. */
	p.len = 0;
	proto_put_u32(&p, 1);
	proto_put_strn(&p, "l\0s", 3);
	proto_put_strv(&p, env);
	proto_put_str(&p, "");
	proto_put_u32(&p, 0);
	CHECK_INT(decode_raw(PROTO_SPAWN, 1, &p), -1);
	CHECK(strstr(last_err, "NUL") != NULL);
	/* Count above the cap. */
	p.len = 0;
	proto_put_u32(&p, PROTO_MAX_STRV + 1);
	CHECK_INT(decode_raw(PROTO_SPAWN, 1, &p), -1);
	CHECK(strstr(last_err, "exceeds") != NULL);
	/* Truncated after argv. */
	p.len = 0;
	proto_put_strv(&p, argv);
	CHECK_INT(decode_raw(PROTO_SPAWN, 1, &p), -1);
	proto_wbuf_free(&p);
}

TEST(config_rejections)
{
	struct proto_wbuf p;
	proto_wbuf_init(&p);
	char *env[] = { NULL };
	char host[PROTO_MAX_HOSTNAME + 2];
	memset(host, 'h', sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	proto_put_str(&p, host);
	proto_put_strv(&p, env);
	proto_put_u64(&p, 0);
	proto_put_u64(&p, 0);
	proto_put_u64(&p, 0);
	proto_put_u32(&p, 0);
	CHECK_INT(decode_raw(PROTO_CONFIG, 0, &p), -1);
	CHECK(strstr(last_err, "hostname") != NULL);
	p.len = 0;
	proto_put_str(&p, "h");
	proto_put_strv(&p, env);
	proto_put_u64(&p, 0);
	proto_put_u64(&p, 0);
	proto_put_u64(&p, 0);
	proto_put_u32(&p, PROTO_MAX_ENTROPY + 1);
	uint8_t zero[PROTO_MAX_ENTROPY + 1] = { 0 };
	proto_put_bytes(&p, zero, sizeof(zero));
	CHECK_INT(decode_raw(PROTO_CONFIG, 0, &p), -1);
	CHECK(strstr(last_err, "entropy") != NULL);
	proto_wbuf_free(&p);
}

TEST(range_rejections)
{
	struct proto_wbuf p;
	proto_wbuf_init(&p);
	proto_put_u32(&p, 0);
	CHECK_INT(decode_raw(PROTO_CREDIT, 1, &p), -1);
	CHECK_INT(decode_raw(PROTO_KILL, 1, &p), -1);
	CHECK_INT(decode_raw(PROTO_EXIT, 1, &p), 0);
	p.len = 0;
	proto_put_u32(&p, PROTO_WINDOW + 1);
	CHECK_INT(decode_raw(PROTO_CREDIT, 1, &p), -1);
	p.len = 0;
	proto_put_u32(&p, 65);
	CHECK_INT(decode_raw(PROTO_KILL, 1, &p), -1);
	p.len = 0;
	proto_put_i32(&p, -1);
	CHECK_INT(decode_raw(PROTO_EXIT, 1, &p), -1);
	p.len = 0;
	proto_put_i32(&p, 256);
	CHECK_INT(decode_raw(PROTO_EXIT, 1, &p), -1);
	p.len = 0;
	CHECK_INT(decode_raw(PROTO_FS_LAST - 1, 1, &p), -1);
	CHECK(strstr(last_err, "unsupported") != NULL);
	proto_wbuf_free(&p);
}

TEST(fs_write_and_fs_error_roundtrip)
{
	struct proto_msg m = { .stream = 9, .type = PROTO_FS_WRITE };
	m.u.fs_write = (struct proto_fs_write){ "/tmp/a b/run.py", 04755, PROTO_FS_PARENTS };
	struct proto_msg d;
	CHECK_INT(roundtrip(&m, &d), 0);
	CHECK_STR(d.u.fs_write.path, "/tmp/a b/run.py");
	CHECK_INT(d.u.fs_write.mode, 04755);
	CHECK_INT(d.u.fs_write.flags, PROTO_FS_PARENTS);
	proto_msg_free(&d);
	struct proto_msg e = { .stream = 9, .type = PROTO_FS_ERROR };
	e.u.fs_error = (struct proto_fs_error){ 2, "parent not found: /a/b" };
	CHECK_INT(roundtrip(&e, &d), 0);
	CHECK_INT(d.u.fs_error.errnum, 2);
	CHECK_STR(d.u.fs_error.message, "parent not found: /a/b");
	proto_msg_free(&d);
}

TEST(warm_up_argv_roundtrip)
{
	char *argv[] = { "python3", "-I", "-B", "-c", "pass", NULL };
	struct proto_msg m = { .stream = 0, .type = PROTO_WARM_UP, .u.warm_up = argv };
	struct proto_msg d;
	CHECK_INT(roundtrip(&m, &d), 0);
	for (int i = 0; i < 5; i++)
		CHECK_STR(d.u.warm_up[i], argv[i]);
	CHECK(d.u.warm_up[5] == NULL);
	proto_msg_free(&d);
}

/* The argv is bounded on both sides: count, lengths, a non-empty argv[0]. */
TEST(warm_up_rejections)
{
	char arg[PROTO_MAX_WARM_UP_ARG + 2];
	memset(arg, 'a', sizeof(arg) - 1);
	arg[sizeof(arg) - 1] = '\0';
	struct proto_wbuf p;
	proto_wbuf_init(&p);
	/* an empty payload: the count is missing */
	CHECK_INT(decode_raw(PROTO_WARM_UP, 0, &p), -1);
	proto_put_u32(&p, 0);
	CHECK_INT(decode_raw(PROTO_WARM_UP, 0, &p), 0);
	CHECK_INT(decode_raw(PROTO_WARM_UP, 3, &p), -1);
	proto_put_u32(&p, 1);
	CHECK_INT(decode_raw(PROTO_WARM_UP, 0, &p), -1); /* trailing bytes */
	/* PROTO_MAX_WARM_UP_ARG bytes pass, one more does not */
	p.len = 0;
	proto_put_u32(&p, 1);
	proto_put_str(&p, arg + 1);
	CHECK_INT(decode_raw(PROTO_WARM_UP, 0, &p), 0);
	p.len = 0;
	proto_put_u32(&p, 1);
	proto_put_str(&p, arg);
	CHECK_INT(decode_raw(PROTO_WARM_UP, 0, &p), -1);
	CHECK(strstr(last_err, "longer than") != NULL);
	p.len = 0;
	proto_put_u32(&p, 2);
	proto_put_str(&p, "");
	proto_put_str(&p, "x");
	CHECK_INT(decode_raw(PROTO_WARM_UP, 0, &p), -1);
	CHECK(strstr(last_err, "empty argv[0]") != NULL);
	/* a count over the cap is refused before any entry is read */
	p.len = 0;
	proto_put_u32(&p, PROTO_MAX_WARM_UP_ARGS + 1);
	CHECK_INT(decode_raw(PROTO_WARM_UP, 0, &p), -1);
	CHECK(strstr(last_err, "at most") != NULL);
	p.len = 0;
	proto_put_u32(&p, PROTO_MAX_WARM_UP_ARGS + 1);
	for (unsigned i = 0; i <= PROTO_MAX_WARM_UP_ARGS; i++)
		proto_put_str(&p, "x");
	CHECK_INT(decode_raw(PROTO_WARM_UP, 0, &p), -1);
	proto_wbuf_free(&p);
	/* the encoder refuses what the decoder would */
	char *many[PROTO_MAX_WARM_UP_ARGS + 2];
	for (unsigned i = 0; i <= PROTO_MAX_WARM_UP_ARGS; i++)
		many[i] = "x";
	many[PROTO_MAX_WARM_UP_ARGS + 1] = NULL;
	char *long_arg[] = { "python3", arg, NULL };
	char *empty[] = { "", NULL };
	char **bad[] = { many, long_arg, empty };
	for (int i = 0; i < 3; i++) {
		struct proto_msg m = { .stream = 0, .type = PROTO_WARM_UP, .u.warm_up = bad[i] };
		struct proto_wbuf f;
		sbx_error_t err = NULL;
		proto_wbuf_init(&f);
		CHECK_INT(proto_msg_encode(&f, &m, &err), -1);
		sbx_error_free(&err);
		proto_wbuf_free(&f);
	}
}

TEST(fs_write_rejections)
{
	struct proto_wbuf p;
	proto_wbuf_init(&p);
	/* on stream 0 */
	proto_put_str(&p, "/x");
	proto_put_u32(&p, 0644);
	proto_put_u32(&p, 0);
	CHECK_INT(decode_raw(PROTO_FS_WRITE, 0, &p), -1);
	CHECK_INT(decode_raw(PROTO_FS_WRITE, 3, &p), 0);
	/* empty path */
	p.len = 0;
	proto_put_str(&p, "");
	proto_put_u32(&p, 0644);
	proto_put_u32(&p, 0);
	CHECK_INT(decode_raw(PROTO_FS_WRITE, 3, &p), -1);
	/* mode beyond 07777 */
	p.len = 0;
	proto_put_str(&p, "/x");
	proto_put_u32(&p, 010000);
	proto_put_u32(&p, 0);
	CHECK_INT(decode_raw(PROTO_FS_WRITE, 3, &p), -1);
	/* unknown flag */
	p.len = 0;
	proto_put_str(&p, "/x");
	proto_put_u32(&p, 0644);
	proto_put_u32(&p, 2);
	CHECK_INT(decode_raw(PROTO_FS_WRITE, 3, &p), -1);
	/* path longer than PROTO_MAX_PATH */
	char *longp = malloc(PROTO_MAX_PATH + 2);
	CHECK(longp != NULL);
	memset(longp, 'a', PROTO_MAX_PATH + 1);
	longp[0] = '/';
	longp[PROTO_MAX_PATH + 1] = '\0';
	p.len = 0;
	proto_put_str(&p, longp);
	proto_put_u32(&p, 0644);
	proto_put_u32(&p, 0);
	free(longp);
	CHECK_INT(decode_raw(PROTO_FS_WRITE, 3, &p), -1);
	/* FS_ERROR with a non-positive errno */
	p.len = 0;
	proto_put_i32(&p, 0);
	proto_put_str(&p, "x");
	CHECK_INT(decode_raw(PROTO_FS_ERROR, 3, &p), -1);
	proto_wbuf_free(&p);
}
