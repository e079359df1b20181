/* Runs one fs request and reports its outcome (fs_ops.h). */
#include "guest/fs_ops.h"

void fs_ops_run(const struct proto_msg *m, int fd)
{
	struct fs_reply r;
	sbx_error_t err = NULL;
	int rc = -1;
	fs_reply_init(&r, fd, m->stream);
	switch (m->type) {
	case PROTO_FS_LS: rc = fs_ls(&m->u.fs_path, &r, &err); break;
	case PROTO_FS_STAT: rc = fs_stat(&m->u.fs_path, &r, &err); break;
	case PROTO_FS_MKDIR: rc = fs_mkdir(&m->u.fs_mkdir, &r, &err); break;
	case PROTO_FS_RM: rc = fs_rm(&m->u.fs_rm, &r, &err); break;
	case PROTO_FS_CHMOD: rc = fs_chmod(&m->u.fs_chmod, &r, &err); break;
	case PROTO_FS_MV: rc = fs_mv(&m->u.fs_mv, &r, &err); break;
	case PROTO_FS_GREP: rc = fs_grep(&m->u.fs_grep, &r, &err); break;
	case PROTO_FS_SED: rc = fs_sed(&m->u.fs_sed, &r, &err); break;
	case PROTO_FS_READ: rc = fs_read(&m->u.fs_path, &r, &err); break;
	default: sbx_error_set(&err, PROTO_FS_EINVALID, "not an fs request: %s", proto_type_name(m->type)); break;
	}
	if (rc < 0)
		fs_reply_fail(&r, err);
	sbx_error_free(&err);
	fs_reply_free(&r);
}
