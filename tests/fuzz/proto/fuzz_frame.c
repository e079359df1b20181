/* Frames from an untrusted peer: the incremental reader, the header codec
 * and every message decoder.  A message that decodes must re-encode to the
 * very same bytes, so encoder and decoder cannot drift apart. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_msg.h"
#include "proto/proto_reader.h"

static void check_roundtrip(const struct proto_header *h, const uint8_t *payload, const struct proto_msg *m)
{
	struct proto_wbuf f;
	sbx_error_t err = NULL;
	proto_wbuf_init(&f);
	if (proto_msg_encode(&f, m, &err) < 0)
		abort();
	/* What the guest's fs_write relies on without re-checking. */
	if (m->type == PROTO_FS_WRITE &&
	    (m->u.fs_write.path[0] == '\0' || m->u.fs_write.mode > 07777 || (m->u.fs_write.flags & ~PROTO_FS_PARENTS)))
		abort();
	/* What the guest's terminals rely on: a size fits a struct winsize. */
	if (m->type == PROTO_SPAWN_PTY &&
	    (m->u.spawn_pty.argv[0][0] == '\0' || m->u.spawn_pty.rows < 1 || m->u.spawn_pty.rows > PROTO_MAX_TTY_DIM ||
	     m->u.spawn_pty.cols < 1 || m->u.spawn_pty.cols > PROTO_MAX_TTY_DIM))
		abort();
	if (m->type == PROTO_RESIZE && (m->u.winsize.rows < 1 || m->u.winsize.rows > PROTO_MAX_TTY_DIM ||
					 m->u.winsize.cols < 1 || m->u.winsize.cols > PROTO_MAX_TTY_DIM))
		abort();
	/* An empty payload may come as NULL, which memcmp must not be given. */
	if (f.len != PROTO_HEADER_SIZE + h->length ||
	    (h->length > 0 && memcmp(f.data + PROTO_HEADER_SIZE, payload, h->length) != 0))
		abort();
	proto_wbuf_free(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_reader rd;
	proto_reader_init(&rd);
	size_t off = 0;
	/* The first byte picks a feed size, to exercise split frames, and
	 * whether payloads are read in place (as the guest reads its port). */
	size_t step = size > 0 ? (size_t)data[0] + 1 : 1;
	bool in_place = size > 0 && (data[0] & 1);
	while (off < size) {
		size_t n = size - off < step ? size - off : step;
		size_t used = 0;
		struct proto_header h;
		const uint8_t *payload;
		sbx_error_t err = NULL;
		size_t want;
		uint8_t *room = in_place ? proto_reader_room(&rd, &want) : NULL;
		int rc;
		if (room != NULL) {
			used = n < want ? n : want;
			memcpy(room, data + off, used);
			rc = proto_reader_filled(&rd, used, &h, &payload);
		} else {
			rc = proto_reader_feed(&rd, data + off, n, &used, &h, &payload, &err);
		}
		if (rc < 0) {
			sbx_error_free(&err);
			break;
		}
		off += used;
		if (rc == 1) {
			struct proto_msg m;
			if (proto_msg_decode(&h, payload, &m, &err) == 0) {
				check_roundtrip(&h, payload, &m);
				proto_msg_free(&m);
			}
			sbx_error_free(&err);
		}
	}
	proto_reader_free(&rd);
	return 0;
}
