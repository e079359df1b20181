/* fs::* (contract §7.8-§7.18): each decodes its request, makes the shape
 * checks the contract puts before the sandbox lookup (fs::write's body,
 * fs::sed's files/path), runs the preamble (UUID, lookup, idle clock), the
 * checks the guest makes first (octal mode), then one guest call through
 * the adapter's fs port (fs_backend.h).  No exec slot is taken; the sandbox
 * is held so its VM is not stopped under the call.  Guest failures get
 * their S-code in fs_error_classify(). */
#include <errno.h>
#include <string.h>

#include "adapter/fs/fs_errors.h"
#include "adapter/fs/fs_hold.h"
#include "adapter/fs/fs_wake.h"
#include "adapter/handlers.h"
#include "adapter/request.h"
#include "adapter/sandbox/sandbox.h"
#include "adapter/scode.h"
#include "common/base64.h"
#include "common/cleanup.h"
#include "common/scodes.h"

/* One request/answer operation on a held sandbox. */
static int run_call(const struct fs_hold *h, const struct proto_msg *req, json_t **out)
{
	sbx_error_t err = NULL;
	if (fs_need_vm(h, &err) < 0)
		return fs_fail(&err, req->type, out);
	*out = h->a->fs.ops->call(h->a->fs.ctx, h->sb->vm, req, &err);
	if (*out != NULL)
		return 0;
	fs_hold_blame_stop(h, &err);
	return fs_fail(&err, req->type, out);
}

/* Decodes `sandbox_id` and the required string `field`. */
static int decode_id_and(json_t *req, const char *field, const char **id, const char **value, sbx_error_t *err)
{
	if (req_object(req, err) < 0)
		return -1;
	if (req_string(req, "sandbox_id", true, id, err) < 0)
		return -1;
	return req_string(req, field, true, value, err);
}

static int path_op(struct sbx_adapter *a, json_t *req, uint8_t type, json_t **out)
{
	sbx_error_t err = NULL;
	const char *id, *path;
	if (decode_id_and(req, "path", &id, &path, &err) < 0)
		return sbx_op_fail(&err, out);
	cleanup_fs_hold struct fs_hold h = fs_hold_wake(a, id, &err);
	if (h.sb == NULL || fs_check_path(path, &err) < 0)
		return sbx_op_fail(&err, out);
	struct proto_msg m = { .type = type, .u.fs_path = { (char *)path } };
	return run_call(&h, &m, out);
}

int sbx_op_fs_ls(struct sbx_adapter *a, json_t *req, json_t **out)
{
	return path_op(a, req, PROTO_FS_LS, out);
}

int sbx_op_fs_stat(struct sbx_adapter *a, json_t *req, json_t **out)
{
	return path_op(a, req, PROTO_FS_STAT, out);
}

/* Releases a sandbox held for fs::read once its pump is done. */
static void read_done(void *ud)
{
	struct fs_hold *h = ud;
	fs_hold_release(h);
	free(h);
}

int sbx_op_fs_read(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *id, *path;
	if (decode_id_and(req, "path", &id, &path, &err) < 0)
		return sbx_op_fail(&err, out);
	cleanup_fs_hold struct fs_hold h = fs_hold_wake(a, id, &err);
	if (h.sb == NULL || fs_check_path(path, &err) < 0 || fs_need_vm(&h, &err) < 0)
		return sbx_op_fail(&err, out);
	struct fs_hold *pumped = malloc(sizeof(*pumped));
	if (pumped == NULL) {
		sbx_error_errno(&err, ENOMEM, "fs::read");
		return sbx_op_fail(&err, out);
	}
	*pumped = (struct fs_hold){ .a = a, .sb = sbx_steal_ptr(h.sb) };
	*out = a->fs.ops->read(a->fs.ctx, pumped->sb->vm, path, read_done, pumped, &err);
	if (*out != NULL)
		return 0;
	fs_hold_blame_stop(pumped, &err);
	read_done(pumped);
	return fs_fail(&err, PROTO_FS_READ, out);
}

int sbx_op_fs_mkdir(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *id, *path, *mode;
	bool parents;
	if (decode_id_and(req, "path", &id, &path, &err) < 0 ||
	    req_string(req, "mode", false, &mode, &err) < 0 ||
	    req_bool(req, "parents", false, &parents, &err) < 0)
		return sbx_op_fail(&err, out);
	cleanup_fs_hold struct fs_hold h = fs_hold_wake(a, id, &err);
	struct proto_msg m = { .type = PROTO_FS_MKDIR };
	if (h.sb == NULL ||
	    fs_parse_mode(mode != NULL ? mode : "0755", &m.u.fs_mkdir.mode, &err) < 0 ||
	    fs_check_path(path, &err) < 0)
		return sbx_op_fail(&err, out);
	m.u.fs_mkdir.path = (char *)path;
	m.u.fs_mkdir.flags = parents ? PROTO_FS_PARENTS : 0;
	return run_call(&h, &m, out);
}

int sbx_op_fs_rm(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *id, *path;
	bool recursive;
	if (decode_id_and(req, "path", &id, &path, &err) < 0 ||
	    req_bool(req, "recursive", false, &recursive, &err) < 0)
		return sbx_op_fail(&err, out);
	cleanup_fs_hold struct fs_hold h = fs_hold_wake(a, id, &err);
	if (h.sb == NULL || fs_check_path(path, &err) < 0)
		return sbx_op_fail(&err, out);
	struct proto_msg m = { .type = PROTO_FS_RM, .u.fs_rm = { (char *)path, recursive ? PROTO_FS_RECURSIVE : 0 } };
	return run_call(&h, &m, out);
}

int sbx_op_fs_chmod(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *id, *path, *mode;
	uint32_t uid = 0, gid = 0;
	bool recursive, has_uid, has_gid;
	if (decode_id_and(req, "path", &id, &path, &err) < 0 ||
	    req_string(req, "mode", true, &mode, &err) < 0 ||
	    req_u32_opt(req, "uid", &has_uid, &uid, &err) < 0 ||
	    req_u32_opt(req, "gid", &has_gid, &gid, &err) < 0 ||
	    req_bool(req, "recursive", false, &recursive, &err) < 0)
		return sbx_op_fail(&err, out);
	cleanup_fs_hold struct fs_hold h = fs_hold_wake(a, id, &err);
	struct proto_msg m = { .type = PROTO_FS_CHMOD };
	if (h.sb == NULL || fs_parse_mode(mode, &m.u.fs_chmod.mode, &err) < 0 || fs_check_path(path, &err) < 0)
		return sbx_op_fail(&err, out);
	m.u.fs_chmod.path = (char *)path;
	m.u.fs_chmod.flags = (recursive ? PROTO_FS_RECURSIVE : 0) | (has_uid ? PROTO_FS_SET_UID : 0) |
			     (has_gid ? PROTO_FS_SET_GID : 0);
	m.u.fs_chmod.uid = uid;
	m.u.fs_chmod.gid = gid;
	return run_call(&h, &m, out);
}

int sbx_op_fs_mv(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *id, *src, *dst;
	bool overwrite;
	if (decode_id_and(req, "src", &id, &src, &err) < 0 ||
	    req_string(req, "dst", true, &dst, &err) < 0 ||
	    req_bool(req, "overwrite", false, &overwrite, &err) < 0)
		return sbx_op_fail(&err, out);
	cleanup_fs_hold struct fs_hold h = fs_hold_wake(a, id, &err);
	if (h.sb == NULL || fs_check_path(src, &err) < 0 || fs_check_path(dst, &err) < 0)
		return sbx_op_fail(&err, out);
	struct proto_msg m = { .type = PROTO_FS_MV,
			       .u.fs_mv = { (char *)src, (char *)dst, overwrite ? PROTO_FS_OVERWRITE : 0 } };
	return run_call(&h, &m, out);
}

/* The walk options grep and sed share; the glob lists become NULL-terminated
 * views (strings borrowed from the request). */
struct walk {
	bool recursive, ignore_case;
	char **include, **exclude;
};

static void walk_free(struct walk *w)
{
	free(w->include);
	free(w->exclude);
}
#define cleanup_walk __attribute__((cleanup(walk_free)))

static int check_globs(json_t *arr, const char *field, sbx_error_t *err)
{
	size_t n = json_array_size(arr);
	if (n > PROTO_FS_MAX_GLOBS)
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "%s holds %zu patterns (at most %u)", field, n,
				       PROTO_FS_MAX_GLOBS);
	return 0;
}

/* Fills w (zeroed first, so walk_free is always safe). */
static int decode_walk(json_t *req, struct walk *w, sbx_error_t *err)
{
	json_t *inc, *exc;
	memset(w, 0, sizeof(*w));
	if (req_bool(req, "recursive", true, &w->recursive, err) < 0)
		return -1;
	if (req_bool(req, "ignore_case", false, &w->ignore_case, err) < 0)
		return -1;
	if (req_string_array(req, "include_glob", &inc, err) < 0)
		return -1;
	if (req_string_array(req, "exclude_glob", &exc, err) < 0)
		return -1;
	if (check_globs(inc, "include_glob", err) < 0)
		return -1;
	if ((w->include = req_strv_view(inc, "include_glob", err)) == NULL)
		return -1;
	if (check_globs(exc, "exclude_glob", err) < 0)
		return -1;
	w->exclude = req_strv_view(exc, "exclude_glob", err);
	return w->exclude != NULL ? 0 : -1;
}

static uint32_t walk_flags(const struct walk *w)
{
	return (w->recursive ? PROTO_FS_RECURSIVE : 0) | (w->ignore_case ? PROTO_FS_IGNORE_CASE : 0);
}

int sbx_op_fs_grep(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *id, *path, *pattern;
	uint64_t max_matches, max_line_bytes;
	cleanup_walk struct walk w = { 0 };
	if (decode_id_and(req, "path", &id, &path, &err) < 0 ||
	    req_string(req, "pattern", true, &pattern, &err) < 0 ||
	    req_u64(req, "max_matches", 10000, &max_matches, &err) < 0 ||
	    req_u64(req, "max_line_bytes", 4096, &max_line_bytes, &err) < 0 ||
	    decode_walk(req, &w, &err) < 0)
		return sbx_op_fail(&err, out);
	cleanup_fs_hold struct fs_hold h = fs_hold_wake(a, id, &err);
	if (h.sb == NULL || fs_check_path(path, &err) < 0)
		return sbx_op_fail(&err, out);
	struct proto_msg m = { .type = PROTO_FS_GREP,
			       .u.fs_grep = { (char *)path, (char *)pattern, walk_flags(&w), w.include, w.exclude,
					      max_matches, max_line_bytes } };
	return run_call(&h, &m, out);
}

/* sed's target: exactly one of a non-empty `files` list or `path` (S210),
 * checked before the lookup but after the id. */
static int check_sed_target(const char *id, json_t *files, const char *path, sbx_error_t *err)
{
	char uuid[SBX_UUID_STRLEN + 1];
	if (req_sandbox_uuid(id, uuid, err) < 0)
		return -1;
	/* An empty `files` list counts as not given. */
	bool has_files = json_array_size(files) > 0;
	if (has_files && path != NULL)
		return sbx_error_scode(err, SBX_S_FS, "sed: provide exactly one of files or path, not both");
	if (!has_files && path == NULL)
		return sbx_error_scode(err, SBX_S_FS, "sed: must provide exactly one of files or path");
	if (json_array_size(files) > PROTO_MAX_STRV)
		return sbx_error_scode(err, SBX_S_FS, "sed: at most %u files", PROTO_MAX_STRV);
	return 0;
}

int sbx_op_fs_sed(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *id, *path, *pattern, *replacement;
	json_t *files;
	bool regex, first_only;
	cleanup_walk struct walk w = { 0 };
	if (decode_id_and(req, "pattern", &id, &pattern, &err) < 0 ||
	    req_string(req, "replacement", true, &replacement, &err) < 0 ||
	    req_string_array(req, "files", &files, &err) < 0 ||
	    req_string(req, "path", false, &path, &err) < 0 ||
	    req_bool(req, "regex", true, &regex, &err) < 0 ||
	    req_bool(req, "first_only", false, &first_only, &err) < 0 ||
	    decode_walk(req, &w, &err) < 0 ||
	    check_sed_target(id, files, path, &err) < 0)
		return sbx_op_fail(&err, out);
	cleanup_fs_hold struct fs_hold h = fs_hold_wake(a, id, &err);
	if (h.sb == NULL || (path != NULL && fs_check_path(path, &err) < 0))
		return sbx_op_fail(&err, out);
	cleanup_free char **fv = req_strv_view(files, "sed files", &err);
	if (fv == NULL)
		return sbx_op_fail(&err, out);
	uint32_t flags = walk_flags(&w) | (regex ? PROTO_FS_REGEX : 0) | (first_only ? PROTO_FS_FIRST_ONLY : 0);
	struct proto_msg m = { .type = PROTO_FS_SED,
			       .u.fs_sed = { fv, (char *)(path != NULL ? path : ""), (char *)pattern, (char *)replacement,
					     flags, w.include, w.exclude } };
	return run_call(&h, &m, out);
}

/* `content` is a string or a StreamChannelRef {channel_id, access_key,
 * direction}; null counts as absent. */
static int decode_content(json_t *req, json_t **content, sbx_error_t *err)
{
	json_t *v = json_object_get(req, "content");
	*content = v != NULL && !json_is_null(v) ? v : NULL;
	if (*content == NULL || json_is_string(v))
		return 0;
	const char *s;
	if (!json_is_object(v))
		return req_type_error(v, "content", "a string or a StreamChannelRef", err);
	if (req_string(v, "channel_id", true, &s, err) < 0)
		return sbx_error_prefix(err, "field `content`");
	if (req_string(v, "access_key", true, &s, err) < 0)
		return sbx_error_prefix(err, "field `content`");
	if (req_string(v, "direction", true, &s, err) < 0)
		return sbx_error_prefix(err, "field `content`");
	if (strcmp(s, "read") != 0 && strcmp(s, "write") != 0)
		return sbx_error_scode(err, SBX_SCODE_DECODE, "unknown variant `%s`, expected `read` or `write` for field "
					     "`content.direction`", s);
	return 0;
}

int sbx_op_fs_write(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *id, *path, *mode, *b64;
	bool parents;
	json_t *content;
	if (decode_id_and(req, "path", &id, &path, &err) < 0 ||
	    req_string(req, "mode", false, &mode, &err) < 0 ||
	    req_bool(req, "parents", false, &parents, &err) < 0 ||
	    decode_content(req, &content, &err) < 0 ||
	    req_string(req, "content_b64", false, &b64, &err) < 0)
		return sbx_op_fail(&err, out);
	/* The body's shape is checked before the sandbox id (contract §7.17). */
	if (content != NULL && b64 != NULL) {
		sbx_error_scode(&err, SBX_S_INVALID_REQUEST,
				"set either `content` (string or StreamChannelRef) or `content_b64`, not both");
		return sbx_op_fail(&err, out);
	}
	if (content == NULL && b64 == NULL) {
		sbx_error_scode(&err, SBX_S_INVALID_REQUEST,
				"missing file body: set `content` (string or StreamChannelRef) or `content_b64`");
		return sbx_op_fail(&err, out);
	}
	struct sbx_fs_write_req w = { .path = path, .parents = parents };
	cleanup_free unsigned char *bytes = NULL;
	if (b64 != NULL) {
		cleanup_error sbx_error_t berr = NULL;
		bytes = sbx_base64_decode(b64, strlen(b64), &w.len, &berr);
		if (bytes == NULL) {
			sbx_error_scode(&err, SBX_S_INVALID_REQUEST, "content_b64 is not valid base64: %s",
					sbx_error_msg(berr));
			return sbx_op_fail(&err, out);
		}
		w.data = bytes;
	} else if (json_is_string(content)) {
		w.data = json_string_value(content);
		w.len = json_string_length(content);
	} else {
		w.channel = content;
	}
	cleanup_fs_hold struct fs_hold h = fs_hold_wake(a, id, &err);
	if (h.sb == NULL)
		return sbx_op_fail(&err, out);
	if (fs_parse_mode(mode != NULL ? mode : "0644", &w.mode, &err) < 0)
		return fs_fail(&err, PROTO_FS_WRITE, out);
	if (fs_check_path(path, &err) < 0)
		return fs_fail(&err, PROTO_FS_WRITE, out);
	if (fs_need_vm(&h, &err) < 0)
		return fs_fail(&err, PROTO_FS_WRITE, out);
	uint64_t written = 0;
	if (a->fs.ops->write(a->fs.ctx, h.sb->vm, &w, &written, &err) < 0) {
		fs_hold_blame_stop(&h, &err);
		return fs_fail(&err, PROTO_FS_WRITE, out);
	}
	*out = json_pack("{s:I, s:s}", "bytes_written", (json_int_t)written, "path", path);
	return 0;
}
