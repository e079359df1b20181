/* Child side of an fs operation: writes the result messages of one stream
 * as whole frames to a pipe the dispatcher forwards (fs_child.h), batching
 * entries, matches and sed results into frames well below
 * PROTO_MAX_PAYLOAD.  Writes block, so a slow host stalls the operation
 * instead of growing memory. */
#ifndef SBX_GUEST_GUEST_FS_REPLY_H
#define SBX_GUEST_GUEST_FS_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "proto/proto_msg.h"

/* A batch frame is sent once its items take this many bytes. */
#define FS_REPLY_BATCH_BYTES (256u * 1024u)

struct fs_reply {
	int fd;
	uint32_t stream;
	struct proto_wbuf frame;
	struct proto_msg batch; /* FS_ENTRIES / FS_MATCHES / FS_SED_FILES being filled */
	size_t batch_bytes;
};

void fs_reply_init(struct fs_reply *r, int fd, uint32_t stream);
void fs_reply_free(struct fs_reply *r);
/* Sends one message on r's stream (m->stream is ignored). */
int fs_reply_send(struct fs_reply *r, struct proto_msg *m, sbx_error_t *err);
/* Sends a STDOUT frame built in place: `frame` holds PROTO_HEADER_SIZE
 * bytes of room, then the n (<= PROTO_MAX_CHUNK) data bytes, which are
 * not copied again. */
int fs_reply_data(struct fs_reply *r, uint8_t *frame, size_t n, sbx_error_t *err);
/* Sends only the header of a STDOUT frame of n (<= PROTO_MAX_CHUNK) bytes:
 * the caller writes those bytes to r->fd next. */
int fs_reply_data_header(struct fs_reply *r, size_t n, sbx_error_t *err);
/* Queue one item (strings are copied); a full batch is sent. */
int fs_reply_entry(struct fs_reply *r, const struct proto_fs_entry *e, sbx_error_t *err);
int fs_reply_match(struct fs_reply *r, const char *path, uint64_t line, const char *content, sbx_error_t *err);
int fs_reply_sed_file(struct fs_reply *r, const char *path, uint64_t replacements, int errnum, const char *error,
		      sbx_error_t *err);
/* Sends the pending batch, then FS_DONE. */
int fs_reply_done(struct fs_reply *r, uint64_t count, uint32_t flags, sbx_error_t *err);
/* Drops the pending batch and sends FS_ERROR for e (errno EIO when e has
 * none); best effort: the pipe may be gone. */
void fs_reply_fail(struct fs_reply *r, sbx_error_t e);

#endif
