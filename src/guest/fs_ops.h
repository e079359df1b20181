/* The fs operations served in a child of the dispatcher (fs_child.h).  Each
 * sends its results through r and ends with FS_DONE (FS_READ: EXIT 0), or
 * returns -1 with *err, which the caller turns into FS_ERROR. */
#ifndef SBX_GUEST_FS_OPS_H
#define SBX_GUEST_FS_OPS_H

#include "common/error.h"
#include "guest/guest_fs_reply.h"
#include "proto/proto_msg.h"

int fs_ls(const struct proto_fs_path *q, struct fs_reply *r, sbx_error_t *err);
int fs_stat(const struct proto_fs_path *q, struct fs_reply *r, sbx_error_t *err);
int fs_mkdir(const struct proto_fs_mkdir *q, struct fs_reply *r, sbx_error_t *err);
int fs_rm(const struct proto_fs_rm *q, struct fs_reply *r, sbx_error_t *err);
int fs_chmod(const struct proto_fs_chmod *q, struct fs_reply *r, sbx_error_t *err);
int fs_mv(const struct proto_fs_mv *q, struct fs_reply *r, sbx_error_t *err);
int fs_grep(const struct proto_fs_grep *q, struct fs_reply *r, sbx_error_t *err);
int fs_sed(const struct proto_fs_sed *q, struct fs_reply *r, sbx_error_t *err);
int fs_read(const struct proto_fs_path *q, struct fs_reply *r, sbx_error_t *err);

/* Runs the fs request m (any of the types above) and sends its result or
 * FS_ERROR on fd. */
void fs_ops_run(const struct proto_msg *m, int fd);

#endif
