/* Incremental frame reader: feed it bytes as they arrive from a stream,
 * take out whole frames.  The payload buffer never grows beyond the
 * header's checked length (<= PROTO_MAX_PAYLOAD). */
#ifndef SBX_PROTO_READER_H
#define SBX_PROTO_READER_H

#include <stddef.h>
#include <stdint.h>

#include "proto/proto.h"

struct proto_reader {
	uint8_t hdr[PROTO_HEADER_SIZE];
	size_t hdr_have;
	struct proto_header h; /* valid once hdr_have == PROTO_HEADER_SIZE */
	uint8_t *payload;
	size_t payload_cap, payload_have;
};

void proto_reader_init(struct proto_reader *r);
void proto_reader_free(struct proto_reader *r);

/* Consumes up to `len` bytes and stores in *used how many it took.  Returns
 * 1 when a frame is complete (header in *h, payload valid until the next
 * feed), 0 when more bytes are needed, -1 on a framing error (bad header or
 * out of memory): the connection cannot be resynchronized after that. */
int proto_reader_feed(struct proto_reader *r, const uint8_t *buf, size_t len, size_t *used,
		      struct proto_header *h, const uint8_t **payload, sbx_error_t *err);

/* Reading in place, without the copy feed makes: while a frame's payload
 * is partly in, returns where its next bytes go and in *n how many are
 * missing; else NULL (feed the next bytes, a header comes first). */
uint8_t *proto_reader_room(struct proto_reader *r, size_t *n);
/* Takes `n` bytes just stored at proto_reader_room's pointer (at most its
 * *n); returns 1 when that completed the frame (as feed does), else 0. */
int proto_reader_filled(struct proto_reader *r, size_t n, struct proto_header *h, const uint8_t **payload);

#endif
