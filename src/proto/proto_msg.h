/* The codec of the control protocol's typed messages (proto_msg_types.h):
 * one decoder and one encoder for all of them, so host and guest cannot
 * drift apart. */
#ifndef SBX_PROTO_MSG_H
#define SBX_PROTO_MSG_H

#include "proto/proto_msg_types.h"

/* Decodes the payload of a frame whose header proto_header_decode accepted.
 * Checks every field, the caps, trailing bytes and that the type travels on
 * the right stream (VM-wide types on 0, process and fs types elsewhere).
 * Undefined fs types are rejected.  On success free with
 * proto_msg_free; on failure nothing needs freeing. */
int proto_msg_decode(const struct proto_header *h, const uint8_t *payload, struct proto_msg *m,
		     sbx_error_t *err);
void proto_msg_free(struct proto_msg *m);

/* Encodes a whole frame (header + payload) into `out`, replacing its
 * contents.  Fails on values a decoder would reject (oversized fields). */
int proto_msg_encode(struct proto_wbuf *out, const struct proto_msg *m, sbx_error_t *err);

/* Name of a message type for logs ("SPAWN"), "?" when unknown. */
const char *proto_type_name(uint8_t type);

#endif
