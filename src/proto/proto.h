/* Host <-> guest control protocol, compiled into both sides.
 *
 * One byte stream per VM (the virtio-serial port named "control"), carrying
 * frames:
 *
 *     u32 length | u32 stream | u8 type | payload[length]
 *
 * All integers are big-endian.  `length` counts the payload only and is at
 * most PROTO_MAX_PAYLOAD; a larger value is a protocol error that ends the
 * connection (the reader never allocates from an unchecked length).
 *
 * Stream 0 carries VM-wide messages (hello, config, ready, ping, shutdown).
 * Every other stream id is chosen by the host, one per process (or, later,
 * per fs operation); the guest answers on the same id.  A stream ends with
 * PROTO_EXIT or PROTO_ERROR from the guest.
 *
 * Payloads are sequences of fields written with the proto_buf helpers below:
 *   u32 / i32 / u64 : fixed width, big-endian
 *   str             : u32 length + bytes (no NUL on the wire; length-capped)
 *   strv            : u32 count + that many str
 *   blob            : u32 length + raw bytes (a str that may hold NULs)
 *   bytes           : the rest of the payload (stdout, stdin, ...); a data
 *                     frame (STDIN, STDOUT, STDERR) holds at most
 *                     PROTO_MAX_CHUNK bytes
 * A decoder rejects a payload with missing fields, over-long strings, counts
 * above the caps below, or trailing bytes.
 *
 * Boot sequence:
 *   guest -> HELLO      {u32 version}              once init has its root
 *   host  -> CONFIG     {str hostname, strv env, u64 memory_bytes,
 *                        u64 nofile (0 = keep), u64 realtime_ns,
 *                        blob entropy (<= PROTO_MAX_ENTROPY bytes)}
 *   guest -> READY      {}  or ERROR {str message} on stream 0
 * Nothing identifying the sandbox travels before CONFIG, so a VM stopped at
 * HELLO can be snapshotted and restored as many sandboxes.
 *
 * Processes (host picks stream id S != 0):
 *   host  -> SPAWN      {strv argv, strv env (layered over the boot env),
 *                        str cwd ("" = /), u32 flags}
 *   guest -> STARTED    {u32 pid}     for every forked process, also one
 *                                     whose exec then fails
 *   host  -> STDIN      {bytes}        only with PROTO_SPAWN_STDIN
 *   host  -> STDIN_EOF  {}
 *   guest -> STDOUT / STDERR {bytes}   at most PROTO_MAX_CHUNK each
 *   both  -> CREDIT     {u32 n}        "I consumed n more bytes of your data
 *                                       on this stream"
 *   host  -> KILL       {u32 signal}   to the process's whole group
 *   guest -> EXIT       {i32 code}     0-255, or 128+signal; after all output
 *   guest -> ERROR      {str message}  the stream failed (not a spawn
 *                                       failure: those are EXIT 127/126 with
 *                                       "exec: <cmd>: not found\n" or
 *                                       "exec: <cmd>: permission denied\n"
 *                                       on STDERR)
 * Flow control: each side may have at most PROTO_WINDOW bytes of STDOUT+
 * STDERR (guest) or STDIN (host) payload unacknowledged per stream; it stops
 * reading the source (the child's pipe, the caller's input) until CREDIT
 * arrives.  A flooding process therefore blocks on its own pipe and never
 * starves other streams or grows memory without bound.
 *
 * VM-wide, stream 0:
 *   host  -> PING {u64 nonce}   guest -> PONG {u64 nonce}
 *   host  -> SHUTDOWN {}        guest syncs, kills everything, reboots
 *                               (with reboot=t and -no-reboot QEMU exits 0)
 *
 * Filesystem operations (types 0x40-0x5f), each on a fresh stream S != 0:
 *   host  -> FS_WRITE   {str path, u32 mode (0..07777, applied exactly),
 *                        u32 flags (PROTO_FS_PARENTS: create missing
 *                        parent directories, 0755)}
 *   host  -> STDIN ... STDIN_EOF   the file's bytes, under the same CREDIT
 *                                  flow control as a process's stdin
 *   guest -> EXIT {0}              written: the bytes went to a temp sibling
 *                                  that was then renamed over `path`, so a
 *                                  reader never sees a partial file
 *   guest -> FS_ERROR   {i32 errno, str message}  failed (nothing replaced);
 *                        errno is the guest's (ENOENT for a missing parent,
 *                        EISDIR, EACCES, ...), message names the path.
 *                        May come before STDIN_EOF: later frames on the
 *                        stream are then ignored.
 */
#ifndef SBX_PROTO_H
#define SBX_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define PROTO_VERSION 1
#define PROTO_HEADER_SIZE 9u
#define PROTO_MAX_PAYLOAD (1024u * 1024u)
#define PROTO_MAX_CHUNK (64u * 1024u)
#define PROTO_WINDOW (256u * 1024u)
#define PROTO_MAX_STR (64u * 1024u)
#define PROTO_MAX_STRV 4096u
#define PROTO_MAX_ENTROPY 512u

enum proto_type {
	PROTO_HELLO = 0x01,
	PROTO_CONFIG = 0x02,
	PROTO_READY = 0x03,
	PROTO_PING = 0x04,
	PROTO_PONG = 0x05,
	PROTO_SHUTDOWN = 0x06,

	PROTO_SPAWN = 0x10,
	PROTO_STARTED = 0x11,
	PROTO_STDIN = 0x12,
	PROTO_STDIN_EOF = 0x13,
	PROTO_STDOUT = 0x14,
	PROTO_STDERR = 0x15,
	PROTO_CREDIT = 0x16,
	PROTO_KILL = 0x17,
	PROTO_EXIT = 0x18,
	PROTO_ERROR = 0x19,

	PROTO_FS_FIRST = 0x40,
	PROTO_FS_WRITE = 0x40,
	PROTO_FS_ERROR = 0x41,
	PROTO_FS_LAST = 0x5f,
};

#define PROTO_SPAWN_STDIN 0x1u /* STDIN frames follow; else stdin is at EOF */
#define PROTO_FS_PARENTS 0x1u  /* FS_WRITE: create missing parent directories */
#define PROTO_MAX_PATH 4096u   /* PATH_MAX */

struct proto_header {
	uint32_t length;
	uint32_t stream;
	uint8_t type;
};

/* Encodes a header into 9 bytes. */
void proto_header_encode(const struct proto_header *h, uint8_t out[PROTO_HEADER_SIZE]);
/* Decodes 9 bytes; fails when length > PROTO_MAX_PAYLOAD or the type is
 * unknown. */
int proto_header_decode(const uint8_t in[PROTO_HEADER_SIZE], struct proto_header *h, sbx_error_t *err);

/* Growable output buffer for building one frame. */
struct proto_wbuf {
	uint8_t *data;
	size_t len, cap;
	int failed; /* set on allocation failure or overflow; checked at the end */
};
void proto_wbuf_init(struct proto_wbuf *b);
void proto_wbuf_free(struct proto_wbuf *b);
void proto_put_u32(struct proto_wbuf *b, uint32_t v);
void proto_put_i32(struct proto_wbuf *b, int32_t v);
void proto_put_u64(struct proto_wbuf *b, uint64_t v);
void proto_put_str(struct proto_wbuf *b, const char *s);
void proto_put_strn(struct proto_wbuf *b, const char *s, size_t n);
void proto_put_strv(struct proto_wbuf *b, char *const *v); /* NULL-terminated */
void proto_put_bytes(struct proto_wbuf *b, const void *p, size_t n);
/* Writes a whole frame (header + payload) into `out` (reset first). */
int proto_frame(struct proto_wbuf *out, uint32_t stream, uint8_t type, const struct proto_wbuf *payload,
		sbx_error_t *err);

/* Bounds-checked reader over one payload. */
struct proto_rbuf {
	const uint8_t *p;
	size_t len, off;
};
void proto_rbuf_init(struct proto_rbuf *r, const void *p, size_t len);
int proto_get_u32(struct proto_rbuf *r, uint32_t *v, sbx_error_t *err);
int proto_get_i32(struct proto_rbuf *r, int32_t *v, sbx_error_t *err);
int proto_get_u64(struct proto_rbuf *r, uint64_t *v, sbx_error_t *err);
/* Returns a freshly allocated NUL-terminated copy; rejects embedded NULs. */
int proto_get_str(struct proto_rbuf *r, char **s, sbx_error_t *err);
/* Returns a freshly allocated NULL-terminated vector (free with
 * proto_strv_free). */
int proto_get_strv(struct proto_rbuf *r, char ***v, sbx_error_t *err);
/* Returns a freshly allocated copy of at most `max` raw bytes (NULs
 * allowed); *p is NULL when *n is 0. */
int proto_get_blob(struct proto_rbuf *r, uint8_t **p, size_t *n, size_t max, sbx_error_t *err);
/* Fails when bytes are left over. */
int proto_get_end(struct proto_rbuf *r, sbx_error_t *err);
void proto_strv_free(char **v);

#endif
