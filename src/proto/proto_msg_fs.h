/* The fs part of the message codec (proto.h, types 0x40-0x5f): called by
 * proto_msg.c for those types only. */
#ifndef SBX_PROTO_MSG_FS_H
#define SBX_PROTO_MSG_FS_H

#include <stdint.h>

#include "proto/proto_msg_types.h"

/* "FS_GREP", or NULL when the type is not a defined fs type. */
const char *proto_fs_type_name(uint8_t type);
int proto_fs_decode_body(struct proto_rbuf *r, struct proto_msg *m, sbx_error_t *err);
int proto_fs_encode_body(struct proto_wbuf *b, const struct proto_msg *m, sbx_error_t *err);
void proto_fs_free(struct proto_msg *m);

#endif
