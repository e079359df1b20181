/* Writes seeds of terminal streams (SPAWN_PTY, RESIZE and what travels on
 * them) and of RESUMED (a pause's end) made by the protocol's own encoder: into argv[1] for fuzz_frame
 * (a first byte choosing the feed size, then frames) and argv[2] for
 * fuzz_request (frames only).  Also frames the encoder refuses, sizes just
 * outside 1..PROTO_MAX_TTY_DIM and RESUMED entropy just outside
 * PROTO_MIN_RESUMED_ENTROPY..PROTO_MAX_ENTROPY, so the decoder's bounds are the first
 * thing the fuzzer mutates around. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_msg.h"

static uint8_t frames[1 << 16];
static size_t len;

static void put(const void *p, size_t n)
{
	if (len + n > sizeof(frames))
		abort();
	memcpy(frames + len, p, n);
	len += n;
}

static void frame(struct proto_msg m)
{
	struct proto_wbuf b;
	sbx_error_t err = NULL;
	proto_wbuf_init(&b);
	if (proto_msg_encode(&b, &m, &err) < 0) {
		fprintf(stderr, "frame_seeds: %s\n", sbx_error_msg(err));
		exit(1);
	}
	put(b.data, b.len);
	proto_wbuf_free(&b);
}

/* SPAWN_PTY (with argv "sh") or RESIZE of any size, bypassing the encoder. */
static void raw_dims(uint8_t type, uint32_t stream, uint32_t rows, uint32_t cols)
{
	static char *argv[] = { "sh", NULL }, *env[] = { NULL };
	struct proto_wbuf p, f;
	sbx_error_t err = NULL;
	proto_wbuf_init(&p);
	proto_wbuf_init(&f);
	if (type == PROTO_SPAWN_PTY) {
		proto_put_strv(&p, argv);
		proto_put_strv(&p, env);
		proto_put_str(&p, "");
	}
	proto_put_u32(&p, rows);
	proto_put_u32(&p, cols);
	if (proto_frame(&f, stream, type, &p, &err) < 0)
		exit(1);
	put(f.data, f.len);
	proto_wbuf_free(&p);
	proto_wbuf_free(&f);
}

/* RESUMED with n bytes of entropy, bypassing the encoder. */
static void raw_resumed(uint32_t stream, size_t n)
{
	static uint8_t entropy[PROTO_MAX_ENTROPY + 1];
	struct proto_wbuf p, f;
	sbx_error_t err = NULL;
	proto_wbuf_init(&p);
	proto_wbuf_init(&f);
	memset(entropy, 0x5a, sizeof(entropy));
	proto_put_u64(&p, 1764806400000000000ull);
	proto_put_u32(&p, (uint32_t)n);
	proto_put_bytes(&p, entropy, n);
	if (proto_frame(&f, stream, PROTO_RESUMED, &p, &err) < 0)
		exit(1);
	put(f.data, f.len);
	proto_wbuf_free(&p);
	proto_wbuf_free(&f);
}

static void save_one(const char *dir, const char *name, int step)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/seed-%s", dir, name);
	FILE *f = fopen(path, "wb");
	uint8_t b = (uint8_t)step;
	if (f == NULL || (step >= 0 && fwrite(&b, 1, 1, f) != 1) || fwrite(frames, 1, len, f) != len ||
	    fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

/* fuzz_frame's copy is fed whole (step 256); fuzz_request takes frames. */
static void save(char **dirs, const char *name)
{
	save_one(dirs[1], name, 255);
	save_one(dirs[2], name, -1);
	len = 0;
}

#define MSG(t, s, ...) ((struct proto_msg){ .type = (t), .stream = (s), __VA_ARGS__ })

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: frame_seeds FUZZ_FRAME_DIR FUZZ_REQUEST_DIR\n");
		return 2;
	}
	static char *sh[] = { "sh", "-i", NULL }, *stty[] = { "stty", "size", NULL };
	static char *env[] = { "TERM=xterm-256color", "PS1=$ ", NULL }, *none[] = { NULL };
	static const uint8_t keys[] = "echo hi\r\x03\x04";
	static const uint8_t screen[] = "$ echo hi\r\nhi\r\n$ ";

	frame(MSG(PROTO_SPAWN_PTY, 1, .u.spawn_pty = { sh, env, "/root", 24, 80 }));
	save(argv, "spawn-pty");

	frame(MSG(PROTO_SPAWN_PTY, 3, .u.spawn_pty = { stty, none, "", 1, PROTO_MAX_TTY_DIM }));
	frame(MSG(PROTO_RESIZE, 3, .u.winsize = { PROTO_MAX_TTY_DIM, 1 }));
	save(argv, "spawn-pty-extreme-sizes");

	/* A whole session, both directions, as the host and guest write it. */
	frame(MSG(PROTO_SPAWN_PTY, 2, .u.spawn_pty = { sh, env, "", 24, 80 }));
	frame(MSG(PROTO_STARTED, 2, .u.pid = 42));
	frame(MSG(PROTO_STDIN, 2, .u.data = { keys, sizeof(keys) - 1 }));
	frame(MSG(PROTO_CREDIT, 2, .u.credit = sizeof(keys) - 1));
	frame(MSG(PROTO_STDOUT, 2, .u.data = { screen, sizeof(screen) - 1 }));
	frame(MSG(PROTO_RESIZE, 2, .u.winsize = { 50, 132 }));
	frame(MSG(PROTO_CREDIT, 2, .u.credit = sizeof(screen) - 1));
	frame(MSG(PROTO_STDIN_EOF, 2));
	frame(MSG(PROTO_KILL, 2, .u.signal = 9));
	frame(MSG(PROTO_EXIT, 2, .u.code = 137));
	save(argv, "pty-session");

	raw_dims(PROTO_SPAWN_PTY, 4, 0, 80);
	raw_dims(PROTO_SPAWN_PTY, 5, 24, PROTO_MAX_TTY_DIM + 1);
	raw_dims(PROTO_RESIZE, 4, PROTO_MAX_TTY_DIM + 1, 80);
	raw_dims(PROTO_RESIZE, 4, 24, 0);
	raw_dims(PROTO_RESIZE, 0, 24, 80); /* on stream 0 */
	save(argv, "pty-sizes-out-of-range");

	/* A resume: RESUMED, then the frames held over the pause. */
	static uint8_t entropy[64];
	memset(entropy, 0xa5, sizeof(entropy));
	frame(MSG(PROTO_RESUMED, 0, .u.resumed = { 1764806400123456789ull, entropy, sizeof(entropy) }));
	frame(MSG(PROTO_STDIN, 2, .u.data = { keys, sizeof(keys) - 1 }));
	frame(MSG(PROTO_CREDIT, 2, .u.credit = sizeof(screen) - 1));
	save(argv, "resumed");

	raw_resumed(0, PROTO_MIN_RESUMED_ENTROPY - 1);
	raw_resumed(0, PROTO_MAX_ENTROPY + 1);
	raw_resumed(0, PROTO_MIN_RESUMED_ENTROPY);
	raw_resumed(3, PROTO_MAX_ENTROPY); /* on a stream */
	save(argv, "resumed-entropy-out-of-range");
	return 0;
}
