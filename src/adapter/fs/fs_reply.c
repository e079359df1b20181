#include "adapter/fs/fs_reply.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "adapter/exec_output.h"
#include "common/cleanup.h"
#include "common/scodes.h"

void fs_mode_string(uint32_t mode, char out[5])
{
	snprintf(out, 5, "%04o", mode & 07777u);
}

void fs_reply_init(struct fs_reply *r, uint8_t op)
{
	r->op = op;
	r->list = json_array();
	r->sed_total = 0;
}

void fs_reply_free(struct fs_reply *r)
{
	json_decref(r->list);
	r->list = NULL;
}

static json_t *text(const char *s)
{
	sbx_error_t ignored = NULL;
	size_t len = 0;
	cleanup_free char *u = utf8_lossy((const uint8_t *)s, strlen(s), &len, &ignored);
	sbx_error_free(&ignored);
	return u != NULL ? json_stringn(u, len) : NULL;
}

static json_t *entry_json(const struct proto_fs_entry *e)
{
	char mode[5];
	fs_mode_string(e->mode, mode);
	return json_pack("{s:o, s:b, s:I, s:s, s:I, s:b}", "name", text(e->name), "is_dir",
			 (e->flags & PROTO_FS_ENTRY_DIR) != 0, "size", (json_int_t)e->size, "mode", mode, "mtime",
			 (json_int_t)e->mtime, "is_symlink", (e->flags & PROTO_FS_ENTRY_SYMLINK) != 0);
}

static json_t *match_json(const struct proto_fs_match *m)
{
	return json_pack("{s:o, s:I, s:o}", "path", text(m->path), "line", (json_int_t)m->line, "content",
			 text(m->content));
}

static json_t *sed_json(struct fs_reply *r, const struct proto_fs_sed_file *f)
{
	json_t *j = json_pack("{s:o, s:I, s:b}", "path", text(f->path), "replacements",
			      (json_int_t)(f->errnum == 0 ? f->replacements : 0), "success", f->errnum == 0);
	if (j != NULL && f->errnum != 0)
		json_object_set_new(j, "error", text(f->error));
	if (f->errnum == 0)
		r->sed_total += f->replacements;
	return j;
}

static uint8_t batch_type_of(uint8_t op)
{
	switch (op) {
	case PROTO_FS_LS:
	case PROTO_FS_STAT:
		return PROTO_FS_ENTRIES;
	case PROTO_FS_GREP:
		return PROTO_FS_MATCHES;
	case PROTO_FS_SED:
		return PROTO_FS_SED_FILES;
	default:
		return 0;
	}
}

int fs_reply_add(struct fs_reply *r, const struct proto_msg *batch, sbx_error_t *err)
{
	if (r->list == NULL)
		return sbx_error_errno(err, ENOMEM, "fs reply");
	if (batch->type != batch_type_of(r->op))
		return sbx_error_scode(err, SBX_S_FS_IO, "shell client error: the guest answered %s to %s",
				       proto_type_name(batch->type), proto_type_name(r->op));
	const struct proto_fs_batch *b = &batch->u.fs_batch;
	for (uint32_t i = 0; i < b->n; i++) {
		json_t *j = batch->type == PROTO_FS_ENTRIES   ? entry_json(&b->v.entries[i])
			    : batch->type == PROTO_FS_MATCHES ? match_json(&b->v.matches[i])
							      : sed_json(r, &b->v.files[i]);
		if (json_array_append_new(r->list, j) < 0)
			return sbx_error_errno(err, ENOMEM, "fs reply");
	}
	if (r->op == PROTO_FS_STAT && json_array_size(r->list) > 1)
		return sbx_error_scode(err, SBX_S_FS_IO, "shell client error: the guest answered stat with several entries");
	return 0;
}

json_t *fs_reply_finish(struct fs_reply *r, const struct proto_fs_done *done, sbx_error_t *err)
{
	json_t *j = NULL;
	switch (r->op) {
	case PROTO_FS_LS:
		j = json_pack("{s:O}", "entries", r->list);
		break;
	case PROTO_FS_STAT:
		if (json_array_size(r->list) != 1) {
			fs_reply_free(r);
			return sbx_error_scode(err, SBX_S_FS_IO, "shell client error: the guest answered stat without an entry"),
			       NULL;
		}
		j = json_incref(json_array_get(r->list, 0));
		break;
	case PROTO_FS_MKDIR:
		j = json_pack("{s:b}", "created", done->count > 0);
		break;
	case PROTO_FS_RM:
		j = json_pack("{s:b}", "removed", 1);
		break;
	case PROTO_FS_CHMOD:
		j = json_pack("{s:I}", "updated", (json_int_t)done->count);
		break;
	case PROTO_FS_MV:
		j = json_pack("{s:b}", "moved", 1);
		break;
	case PROTO_FS_GREP:
		j = json_pack("{s:O, s:b}", "matches", r->list, "truncated", (done->flags & PROTO_FS_TRUNCATED) != 0);
		break;
	case PROTO_FS_SED:
		j = json_pack("{s:O, s:I}", "results", r->list, "total_replacements", (json_int_t)r->sed_total);
		break;
	default:
		break;
	}
	fs_reply_free(r);
	if (j == NULL)
		sbx_error_errno(err, ENOMEM, "fs reply");
	return j;
}
