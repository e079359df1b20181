/* PROTO_FS_WRITE in the guest: the bytes of one file go to a temp sibling
 * of the target, which is renamed over it once STDIN_EOF arrives, so no
 * reader ever sees a partial file and a failed write replaces nothing. */
#ifndef SBX_GUEST_FS_WRITE_H
#define SBX_GUEST_FS_WRITE_H

#include <stddef.h>

#include "common/error.h"
#include "proto/proto_msg.h"

struct fs_write;

/* Creates the temp file (and, with PROTO_FS_PARENTS, missing parents).
 * Errors carry the errno the host reports in FS_ERROR. */
struct fs_write *fs_write_open(const struct proto_fs_write *req, sbx_error_t *err);
int fs_write_data(struct fs_write *w, const void *p, size_t n, sbx_error_t *err);
/* Applies the mode exactly, renames into place and frees w (also on
 * failure). */
int fs_write_finish(struct fs_write *w, sbx_error_t *err);
/* Removes the temp file and frees w. */
void fs_write_abort(struct fs_write *w);

#endif
