/* WARM_UP's and RESUMED's payloads (proto.h): called by proto_msg.c for
 * those types only. */
#ifndef SBX_PROTO_PROTO_MSG_VM_H
#define SBX_PROTO_PROTO_MSG_VM_H

#include "proto/proto_msg_types.h"

/* WARM_UP: the argv's bounds (count, lengths, a non-empty argv[0]). */
int proto_warm_up_check(char *const *argv, sbx_error_t *err);
int proto_warm_up_decode(struct proto_rbuf *r, char ***argv, sbx_error_t *err);
int proto_resumed_decode(struct proto_rbuf *r, struct proto_resumed *m, sbx_error_t *err);
int proto_resumed_encode(struct proto_wbuf *b, const struct proto_resumed *m, sbx_error_t *err);

#endif
