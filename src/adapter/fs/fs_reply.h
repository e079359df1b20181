/* The contract's reply shapes (§7.9-§7.16) built from the guest's result
 * batches, incrementally: a reply is started, fed each batch, then
 * finished with the guest's FS_DONE.  Guest strings are hostile: bytes
 * that are not UTF-8 are replaced, never passed through. */
#ifndef SBX_ADAPTER_FS_REPLY_H
#define SBX_ADAPTER_FS_REPLY_H

#include <jansson.h>

#include "common/error.h"
#include "proto/proto_msg.h"

struct fs_reply {
	uint8_t op;   /* the request's type */
	json_t *list; /* entries, matches or results */
	uint64_t sed_total;
};

void fs_reply_init(struct fs_reply *r, uint8_t op);
/* Takes one batch (borrowed); fails when its type does not belong to op. */
int fs_reply_add(struct fs_reply *r, const struct proto_msg *batch, sbx_error_t *err);
/* The reply (a new reference); frees the builder either way. */
json_t *fs_reply_finish(struct fs_reply *r, const struct proto_fs_done *done, sbx_error_t *err);
void fs_reply_free(struct fs_reply *r);

/* "0644": four octal digits of the low 12 bits. */
void fs_mode_string(uint32_t mode, char out[5]);

#endif
