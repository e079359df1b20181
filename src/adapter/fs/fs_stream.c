/* fs::write and fs::read for the operator's cp (fs_stream.h). */
#include "adapter/fs/fs_stream.h"

#include "adapter/fs/fs_hold.h"
#include "adapter/fs/fs_wake.h"
#include "adapter/scode.h"
#include "common/scodes.h"

int sbx_fs_write_from(struct sbx_adapter *a, const char *id, const char *path, const char *mode,
		      ssize_t (*source)(void *ud, const void **data, sbx_error_t *err), void *ud, json_t **out)
{
	sbx_error_t err = NULL;
	struct sbx_fs_write_req w = { .path = path, .source = source, .source_ud = ud };
	cleanup_fs_hold struct fs_hold h = fs_hold_wake(a, id, &err);
	if (h.sb == NULL)
		return sbx_op_fail(&err, out);
	if (fs_parse_mode(mode != NULL ? mode : "0644", &w.mode, &err) < 0 || fs_check_path(path, &err) < 0 ||
	    fs_need_vm(&h, &err) < 0)
		return fs_fail(&err, PROTO_FS_WRITE, out);
	uint64_t written = 0;
	if (a->fs.ops->write(a->fs.ctx, h.sb->vm, &w, &written, &err) < 0) {
		fs_hold_blame_stop(&h, &err);
		return fs_fail(&err, PROTO_FS_WRITE, out);
	}
	*out = json_pack("{s:I, s:s}", "bytes_written", (json_int_t)written, "path", path);
	return 0;
}

int sbx_fs_read_into(struct sbx_adapter *a, const char *id, const char *path, sbx_fs_sink_fn sink, void *ud,
		     json_t **out)
{
	sbx_error_t err = NULL;
	cleanup_fs_hold struct fs_hold h = fs_hold_wake(a, id, &err);
	if (h.sb == NULL)
		return sbx_op_fail(&err, out);
	if (fs_check_path(path, &err) < 0 || fs_need_vm(&h, &err) < 0)
		return fs_fail(&err, PROTO_FS_READ, out);
	if (a->fs.ops->read_to == NULL) {
		sbx_error_scode(&err, SBX_S_VM_BOOT, SBX_NO_VM_DETAIL);
		return fs_fail(&err, PROTO_FS_READ, out);
	}
	uint64_t size = 0;
	if (a->fs.ops->read_to(a->fs.ctx, h.sb->vm, path, sink, ud, &size, &err) < 0) {
		fs_hold_blame_stop(&h, &err);
		return fs_fail(&err, PROTO_FS_READ, out);
	}
	*out = json_pack("{s:I, s:s}", "size", (json_int_t)size, "path", path);
	return 0;
}
