/* Writes the seeds of fuzz_vm_channel into the directory argv[1]: scripts
 * whose guest bytes are frames made by the protocol's own encoder (the one
 * the guest uses), for a boot, processes with output and stdin, every fs
 * result kind, and guests that break the protocol.
 *
 * Script format (tests/fuzz/vm/fuzz_channel.c), one op byte then operands:
 *   op & 7 == 0      the host opens a stream into the first free slot;
 *                    next byte % 6: 0 spawn, 1 spawn with stdin, 2 fs
 *                    write, 3 fs ls, 4 fs read, 5 fs grep.  Stream ids
 *                    count from 1 in opening order.
 *   op & 7 in 1..2   guest bytes: length in the next byte (op & 8: the
 *                    next two, big-endian), then that many bytes.
 *   op & 7 == 3      the guest sends its last bytes again, as many times as
 *                    the next byte says (op & 8: the next two), up to
 *                    20 MiB in all: floods from a small input.
 *   op & 7 in 4..6   host step on slot (op >> 3) % 8; next byte % 6: 0 read
 *                    output (up to 1 + 16 * next byte bytes), 1 next fs
 *                    result, 2 write 1 + 1024 * next byte bytes of stdin,
 *                    3 close stdin, 4 kill, 5 wait (no blocking).
 *   op & 7 == 7      the host releases slot (op >> 3) % 8. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_msg.h"

static uint8_t script[1 << 20];
static size_t len;

static void put(const void *p, size_t n)
{
	if (len + n > sizeof(script))
		abort();
	memcpy(script + len, p, n);
	len += n;
}

static void op(uint8_t o, int operand)
{
	put(&o, 1);
	if (operand >= 0) {
		uint8_t b = (uint8_t)operand;
		put(&b, 1);
	}
}

static void open_stream(int kind) { op(0, kind); }
static void host(int slot, int step, int arg)
{
	op((uint8_t)(4 | slot << 3), step);
	if (arg >= 0)
		op((uint8_t)arg, -1);
}
static void release(int slot) { op((uint8_t)(7 | slot << 3), -1); }

/* One frame as the guest writes it. */
static void guest(struct proto_msg m)
{
	struct proto_wbuf b;
	sbx_error_t err = NULL;
	proto_wbuf_init(&b);
	if (proto_msg_encode(&b, &m, &err) < 0 || b.len > 0xffff) {
		fprintf(stderr, "channel_seeds: %s\n", err ? sbx_error_msg(err) : "frame too long");
		exit(1);
	}
	uint8_t hdr[3] = { 1 | 8, (uint8_t)(b.len >> 8), (uint8_t)b.len };
	put(hdr, 3);
	put(b.data, b.len);
	proto_wbuf_free(&b);
}

/* Raw bytes, for what no encoder would write. */
static void guest_raw(const void *p, size_t n)
{
	uint8_t hdr[3] = { 2 | 8, (uint8_t)(n >> 8), (uint8_t)n };
	put(hdr, 3);
	put(p, n);
}

static void save(const char *dir, const char *name)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/seed-%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (f == NULL || fwrite(script, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
	len = 0;
}

#define MSG(t, s, ...) ((struct proto_msg){ .type = (t), .stream = (s), __VA_ARGS__ })

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: channel_seeds DIR\n");
		return 2;
	}
	const char *dir = argv[1];
	static const uint8_t out[] = "hello from the guest\n";

	guest(MSG(PROTO_HELLO, 0, .u.version = PROTO_VERSION));
	guest(MSG(PROTO_READY, 0));
	guest(MSG(PROTO_PONG, 0, .u.nonce = 1));
	save(dir, "boot");

	open_stream(0);
	guest(MSG(PROTO_STARTED, 1, .u.pid = 42));
	guest(MSG(PROTO_STDOUT, 1, .u.data = { out, sizeof(out) - 1 }));
	guest(MSG(PROTO_STDERR, 1, .u.data = { out, 5 }));
	host(0, 0, 255);
	host(0, 0, 0);
	guest(MSG(PROTO_EXIT, 1, .u.code = 3));
	host(0, 5, -1);
	release(0);
	save(dir, "spawn-output-exit");

	open_stream(1);
	guest(MSG(PROTO_STARTED, 1, .u.pid = 7));
	host(0, 2, 63); /* 64 KiB of stdin */
	guest(MSG(PROTO_CREDIT, 1, .u.credit = 65536));
	host(0, 2, 255);
	host(0, 2, 255);
	guest(MSG(PROTO_CREDIT, 1, .u.credit = 4096));
	host(0, 3, -1);
	host(0, 4, -1);
	guest(MSG(PROTO_ERROR, 1, .u.message = "killed"));
	save(dir, "spawn-stdin-credit");

	open_stream(2);
	host(0, 2, 3);
	host(0, 3, -1);
	guest(MSG(PROTO_CREDIT, 1, .u.credit = 3073));
	guest(MSG(PROTO_FS_DONE, 1, .u.fs_done = { .count = 1 }));
	host(0, 5, -1);
	save(dir, "fs-write");

	struct proto_fs_entry entries[] = {
		{ .name = "bin", .mode = 0755, .flags = PROTO_FS_ENTRY_DIR, .size = 4096, .mtime = 1 },
		{ .name = "sh", .mode = 0777, .flags = PROTO_FS_ENTRY_SYMLINK, .size = 4, .mtime = 2 },
		{ .name = "f", .mode = 0644, .size = 12, .mtime = -1 },
	};
	open_stream(3);
	open_stream(4);
	guest(MSG(PROTO_FS_ENTRIES, 1, .u.fs_batch = { .n = 3, .v.entries = entries }));
	guest(MSG(PROTO_FS_META, 2, .u.fs_meta = { .size = 12, .mode = 0644, .mtime = 5 }));
	guest(MSG(PROTO_STDOUT, 2, .u.data = { out, 12 }));
	guest(MSG(PROTO_FS_DONE, 1, .u.fs_done = { .count = 3 }));
	host(0, 1, -1);
	host(0, 1, -1);
	host(1, 1, -1);
	host(1, 0, 255);
	guest(MSG(PROTO_FS_DONE, 2, .u.fs_done = { .count = 12 }));
	host(1, 1, -1);
	save(dir, "fs-ls-read");

	struct proto_fs_match matches[] = { { .path = "/etc/passwd", .line = 1, .content = "root:x:0:0" } };
	struct proto_fs_sed_file files[] = { { .path = "/a", .replacements = 2, .error = "" },
					     { .path = "/b", .errnum = 13, .error = "Permission denied" } };
	open_stream(5);
	open_stream(5);
	guest(MSG(PROTO_FS_MATCHES, 1, .u.fs_batch = { .n = 1, .v.matches = matches }));
	guest(MSG(PROTO_FS_SED_FILES, 2, .u.fs_batch = { .n = 2, .v.files = files }));
	guest(MSG(PROTO_FS_DONE, 1, .u.fs_done = { .count = 1, .flags = PROTO_FS_TRUNCATED }));
	guest(MSG(PROTO_FS_ERROR, 2, .u.fs_error = { .errnum = PROTO_FS_EREGEX, .message = "bad regex" }));
	host(0, 1, -1);
	host(1, 1, -1);
	save(dir, "fs-grep-error");

	/* Guests that break the protocol or talk about streams that are gone. */
	open_stream(0);
	release(0);
	guest(MSG(PROTO_STDOUT, 1, .u.data = { out, 4 }));
	guest(MSG(PROTO_EXIT, 9, .u.code = 0));
	guest(MSG(PROTO_ERROR, 0, .u.message = "config failed"));
	guest(MSG(PROTO_CREDIT, 1, .u.credit = 1));
	guest(MSG(PROTO_HELLO, 0, .u.version = 1));
	save(dir, "stale-streams-bad-version");

	open_stream(1);
	guest(MSG(PROTO_CREDIT, 1, .u.credit = 1));
	save(dir, "credit-beyond-sent");

	static char *argv0[] = { "sh", NULL };
	static char *env0[] = { NULL };
	guest(MSG(PROTO_SPAWN, 1, .u.spawn = { .argv = argv0, .env = env0, .cwd = "" }));
	save(dir, "host-only-message");

	/* Floods: output past the window while the host does not read, and fs
	 * results past their 16 MiB cap. */
	static uint8_t chunk[4096];
	open_stream(0);
	guest(MSG(PROTO_STDOUT, 1, .u.data = { chunk, sizeof(chunk) }));
	op(3, 70);
	save(dir, "window-overrun");

	/* Few long names: the flood costs copies, not allocations. */
	static char name[2001];
	static struct proto_fs_entry many[8];
	memset(name, 'n', sizeof(name) - 1);
	for (size_t i = 0; i < 8; i++)
		many[i] = (struct proto_fs_entry){ .name = name, .mode = 0644, .size = i };
	open_stream(3);
	guest(MSG(PROTO_FS_ENTRIES, 1, .u.fs_batch = { .n = 8, .v.entries = many }));
	op(3 | 8, 0x04); /* 0x0480 times: 18 MiB (0x80 is the low byte) */
	op(0x80, -1);
	host(0, 1, -1);
	host(0, 5, -1);
	save(dir, "fs-results-over-cap");

	/* A header promising more than the payload limit, and one cut short. */
	static const uint8_t huge[] = { 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, PROTO_STDOUT };
	static const uint8_t cut[] = { 0, 0, 0x10, 0, 0, 0, 0, 1, PROTO_STDOUT, 'x' };
	open_stream(0);
	guest_raw(cut, sizeof(cut));
	host(0, 0, 1);
	save(dir, "cut-frame");
	guest_raw(huge, sizeof(huge));
	save(dir, "oversized-frame");
	return 0;
}
