/* fs::*: each decodes its request, makes the shape checks the contract puts
 * before the sandbox lookup (fs::write's body, fs::sed's files/path), then
 * runs the preamble (UUID, lookup).  The guest side of every operation needs
 * a VM, which this build cannot boot: a found sandbox answers S300. */
#include <string.h>

#include "adapter/handlers.h"
#include "adapter/octal.h"
#include "adapter/request.h"
#include "adapter/scode.h"
#include "common/base64.h"
#include "common/cleanup.h"

/* Preamble (UUID -> S001, lookup -> S002/S004), then the mode check the
 * guest makes first (S210), then S300. */
static int preamble_then_no_vm(struct sbx_adapter *a, const char *id, const char *mode, json_t **out)
{
	sbx_error_t err = NULL;
	char uuid[SBX_UUID_STRLEN + 1];
	if (req_sandbox_uuid(id, uuid, &err) < 0)
		return sbx_op_fail(&err, out);
	struct sbx_sandbox *sb = sbx_registry_acquire(a->reg, uuid, &err);
	if (sb == NULL)
		return sbx_op_fail(&err, out);
	sbx_registry_release(a->reg, sb);
	unsigned m;
	if (mode == NULL || octal_mode_parse(mode, &m, &err) == 0)
		sbx_error_scode(&err, "S300", SBX_NO_VM_DETAIL);
	return sbx_op_fail(&err, out);
}

/* Decodes `sandbox_id` and the required string `field`. */
static int decode_id_and(json_t *req, const char *field, const char **id, const char **value, sbx_error_t *err)
{
	return req_object(req, err) < 0 || req_string(req, "sandbox_id", true, id, err) < 0 ||
			       req_string(req, field, true, value, err) < 0
		       ? -1
		       : 0;
}

int sbx_op_fs_ls(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *id, *path;
	if (decode_id_and(req, "path", &id, &path, &err) < 0)
		return sbx_op_fail(&err, out);
	return preamble_then_no_vm(a, id, NULL, out);
}

int sbx_op_fs_stat(struct sbx_adapter *a, json_t *req, json_t **out)
{
	return sbx_op_fs_ls(a, req, out);
}

int sbx_op_fs_read(struct sbx_adapter *a, json_t *req, json_t **out)
{
	return sbx_op_fs_ls(a, req, out);
}

int sbx_op_fs_mkdir(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *id, *path, *mode;
	bool parents;
	if (decode_id_and(req, "path", &id, &path, &err) < 0 || req_string(req, "mode", false, &mode, &err) < 0 ||
	    req_bool(req, "parents", false, &parents, &err) < 0)
		return sbx_op_fail(&err, out);
	return preamble_then_no_vm(a, id, mode != NULL ? mode : "0755", out);
}

int sbx_op_fs_rm(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *id, *path;
	bool recursive;
	if (decode_id_and(req, "path", &id, &path, &err) < 0 || req_bool(req, "recursive", false, &recursive, &err) < 0)
		return sbx_op_fail(&err, out);
	return preamble_then_no_vm(a, id, NULL, out);
}

int sbx_op_fs_chmod(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *id, *path, *mode;
	uint32_t uid, gid;
	bool recursive;
	if (decode_id_and(req, "path", &id, &path, &err) < 0 || req_string(req, "mode", true, &mode, &err) < 0 ||
	    req_u32_opt(req, "uid", NULL, &uid, &err) < 0 || req_u32_opt(req, "gid", NULL, &gid, &err) < 0 ||
	    req_bool(req, "recursive", false, &recursive, &err) < 0)
		return sbx_op_fail(&err, out);
	return preamble_then_no_vm(a, id, mode, out);
}

int sbx_op_fs_mv(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *id, *src, *dst;
	bool overwrite;
	if (decode_id_and(req, "src", &id, &src, &err) < 0 || req_string(req, "dst", true, &dst, &err) < 0 ||
	    req_bool(req, "overwrite", false, &overwrite, &err) < 0)
		return sbx_op_fail(&err, out);
	return preamble_then_no_vm(a, id, NULL, out);
}

/* The walk options grep and sed share. */
static int decode_walk(json_t *req, sbx_error_t *err)
{
	bool recursive, ignore_case;
	json_t *inc, *exc;
	return req_bool(req, "recursive", true, &recursive, err) < 0 ||
			       req_bool(req, "ignore_case", false, &ignore_case, err) < 0 ||
			       req_string_array(req, "include_glob", &inc, err) < 0 ||
			       req_string_array(req, "exclude_glob", &exc, err) < 0
		       ? -1
		       : 0;
}

int sbx_op_fs_grep(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *id, *path, *pattern;
	uint64_t max_matches, max_line_bytes;
	if (decode_id_and(req, "path", &id, &path, &err) < 0 || req_string(req, "pattern", true, &pattern, &err) < 0 ||
	    decode_walk(req, &err) < 0 || req_u64(req, "max_matches", 10000, &max_matches, &err) < 0 ||
	    req_u64(req, "max_line_bytes", 4096, &max_line_bytes, &err) < 0)
		return sbx_op_fail(&err, out);
	return preamble_then_no_vm(a, id, NULL, out);
}

int sbx_op_fs_sed(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *id, *path, *pattern, *replacement;
	json_t *files;
	bool regex, first_only;
	if (decode_id_and(req, "pattern", &id, &pattern, &err) < 0 ||
	    req_string(req, "replacement", true, &replacement, &err) < 0 ||
	    req_string_array(req, "files", &files, &err) < 0 || req_string(req, "path", false, &path, &err) < 0 ||
	    decode_walk(req, &err) < 0 || req_bool(req, "regex", true, &regex, &err) < 0 ||
	    req_bool(req, "first_only", false, &first_only, &err) < 0)
		return sbx_op_fail(&err, out);
	char uuid[SBX_UUID_STRLEN + 1];
	if (req_sandbox_uuid(id, uuid, &err) < 0)
		return sbx_op_fail(&err, out);
	/* An empty `files` list counts as not given; checked before the lookup. */
	bool has_files = files != NULL && json_array_size(files) > 0;
	if (has_files && path != NULL)
		sbx_error_scode(&err, "S210", "sed: provide exactly one of files or path, not both");
	else if (!has_files && path == NULL)
		sbx_error_scode(&err, "S210", "sed: must provide exactly one of files or path");
	if (err != NULL)
		return sbx_op_fail(&err, out);
	return preamble_then_no_vm(a, uuid, NULL, out);
}

/* `content` is a string or a StreamChannelRef {channel_id, access_key,
 * direction}; null counts as absent. */
static int decode_content(json_t *req, bool *present, sbx_error_t *err)
{
	json_t *v = json_object_get(req, "content");
	*present = v != NULL && !json_is_null(v);
	if (!*present || json_is_string(v))
		return 0;
	const char *s;
	if (!json_is_object(v))
		return req_type_error(v, "content", "a string or a StreamChannelRef", err);
	if (req_string(v, "channel_id", true, &s, err) < 0 || req_string(v, "access_key", true, &s, err) < 0 ||
	    req_string(v, "direction", true, &s, err) < 0)
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
	bool parents, has_content;
	if (decode_id_and(req, "path", &id, &path, &err) < 0 || req_string(req, "mode", false, &mode, &err) < 0 ||
	    req_bool(req, "parents", false, &parents, &err) < 0 || decode_content(req, &has_content, &err) < 0 ||
	    req_string(req, "content_b64", false, &b64, &err) < 0)
		return sbx_op_fail(&err, out);
	/* The body's shape is checked before the sandbox id (contract §7.17). */
	if (has_content && b64 != NULL) {
		sbx_error_scode(&err, "S001", "set either `content` (string or StreamChannelRef) or `content_b64`, not both");
		return sbx_op_fail(&err, out);
	}
	if (!has_content && b64 == NULL) {
		sbx_error_scode(&err, "S001", "missing file body: set `content` (string or StreamChannelRef) or `content_b64`");
		return sbx_op_fail(&err, out);
	}
	if (b64 != NULL) {
		size_t n;
		sbx_error_t berr = NULL;
		cleanup_free unsigned char *bytes = sbx_base64_decode(b64, strlen(b64), &n, &berr);
		if (bytes == NULL) {
			sbx_error_scode(&err, "S001", "content_b64 is not valid base64: %s", sbx_error_msg(berr));
			sbx_error_free(&berr);
			return sbx_op_fail(&err, out);
		}
	}
	return preamble_then_no_vm(a, id, mode != NULL ? mode : "0644", out);
}
