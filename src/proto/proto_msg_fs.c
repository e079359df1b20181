/* Decoders and encoders of the fs requests and results (proto.h). */
#include "proto/proto_msg_fs.h"

#include <stdlib.h>
#include <string.h>

const char *proto_fs_type_name(uint8_t type)
{
	switch (type) {
	case PROTO_FS_LS: return "FS_LS";
	case PROTO_FS_STAT: return "FS_STAT";
	case PROTO_FS_MKDIR: return "FS_MKDIR";
	case PROTO_FS_RM: return "FS_RM";
	case PROTO_FS_CHMOD: return "FS_CHMOD";
	case PROTO_FS_MV: return "FS_MV";
	case PROTO_FS_GREP: return "FS_GREP";
	case PROTO_FS_SED: return "FS_SED";
	case PROTO_FS_READ: return "FS_READ";
	case PROTO_FS_ENTRIES: return "FS_ENTRIES";
	case PROTO_FS_MATCHES: return "FS_MATCHES";
	case PROTO_FS_SED_FILES: return "FS_SED_FILES";
	case PROTO_FS_META: return "FS_META";
	case PROTO_FS_DONE: return "FS_DONE";
	}
	return NULL;
}

/* ---- field helpers ---- */

static int valid_path(const char *p)
{
	return p != NULL && p[0] != '\0' && strlen(p) <= PROTO_MAX_PATH;
}

static int get_i64(struct proto_rbuf *r, int64_t *v, sbx_error_t *err)
{
	uint64_t u;
	if (proto_get_u64(r, &u, err) < 0)
		return -1;
	*v = (int64_t)u; /* two's complement on the wire */
	return 0;
}

static int get_globs(struct proto_rbuf *r, char ***v, const char *what, sbx_error_t *err)
{
	if (proto_get_strv(r, v, err) < 0)
		return sbx_error_prefix(err, "%s", what);
	if (sbx_strv_len(*v) > PROTO_FS_MAX_GLOBS)
		return sbx_error_set(err, 0, "%s has more than %u patterns", what, PROTO_FS_MAX_GLOBS);
	for (size_t i = 0; (*v)[i] != NULL; i++)
		if (!valid_path((*v)[i]))
			return sbx_error_set(err, 0, "%s pattern %zu empty or too long", what, i);
	return 0;
}

/* ---- requests ---- */

static int decode_mkdir(struct proto_rbuf *r, struct proto_fs_mkdir *q, sbx_error_t *err)
{
	if (proto_get_path(r, &q->path, "path", err) < 0)
		return -1;
	if (proto_get_mode(r, &q->mode, err) < 0)
		return -1;
	return proto_get_flags(r, &q->flags, PROTO_FS_PARENTS, "fs", err);
}

static int decode_chmod(struct proto_rbuf *r, struct proto_fs_chmod *q, sbx_error_t *err)
{
	if (proto_get_path(r, &q->path, "path", err) < 0)
		return -1;
	if (proto_get_mode(r, &q->mode, err) < 0)
		return -1;
	if (proto_get_flags(r, &q->flags, PROTO_FS_RECURSIVE | PROTO_FS_SET_UID | PROTO_FS_SET_GID, "fs", err) < 0)
		return -1;
	if (proto_get_u32(r, &q->uid, err) < 0)
		return sbx_error_prefix(err, "uid/gid");
	if (proto_get_u32(r, &q->gid, err) < 0)
		return sbx_error_prefix(err, "uid/gid");
	return 0;
}

static int decode_mv(struct proto_rbuf *r, struct proto_fs_mv *q, sbx_error_t *err)
{
	if (proto_get_path(r, &q->src, "src", err) < 0)
		return -1;
	if (proto_get_path(r, &q->dst, "dst", err) < 0)
		return -1;
	return proto_get_flags(r, &q->flags, PROTO_FS_OVERWRITE, "fs", err);
}

static int decode_grep(struct proto_rbuf *r, struct proto_fs_grep *q, sbx_error_t *err)
{
	if (proto_get_path(r, &q->path, "path", err) < 0)
		return -1;
	if (proto_get_str(r, &q->pattern, err) < 0)
		return sbx_error_prefix(err, "pattern");
	if (proto_get_flags(r, &q->flags, PROTO_FS_RECURSIVE | PROTO_FS_IGNORE_CASE, "fs", err) < 0)
		return -1;
	if (get_globs(r, &q->include, "include", err) < 0)
		return -1;
	if (get_globs(r, &q->exclude, "exclude", err) < 0)
		return -1;
	if (proto_get_u64(r, &q->max_matches, err) < 0)
		return sbx_error_prefix(err, "limits");
	if (proto_get_u64(r, &q->max_line_bytes, err) < 0)
		return sbx_error_prefix(err, "limits");
	return 0;
}

static int decode_sed(struct proto_rbuf *r, struct proto_fs_sed *q, sbx_error_t *err)
{
	if (proto_get_strv(r, &q->files, err) < 0)
		return sbx_error_prefix(err, "files");
	for (size_t i = 0; q->files[i] != NULL; i++)
		if (!valid_path(q->files[i]))
			return sbx_error_set(err, 0, "files entry %zu empty or too long", i);
	if (proto_get_str(r, &q->path, err) < 0)
		return sbx_error_prefix(err, "path");
	if ((q->files[0] != NULL) == (q->path[0] != '\0'))
		return sbx_error_set(err, 0, "exactly one of files or path must be given");
	if (q->path[0] != '\0' && !valid_path(q->path))
		return sbx_error_set(err, 0, "path longer than %u bytes", PROTO_MAX_PATH);
	if (proto_get_str(r, &q->pattern, err) < 0)
		return sbx_error_prefix(err, "pattern");
	if (proto_get_str(r, &q->replacement, err) < 0)
		return sbx_error_prefix(err, "replacement");
	uint32_t allowed = PROTO_FS_RECURSIVE | PROTO_FS_IGNORE_CASE | PROTO_FS_REGEX | PROTO_FS_FIRST_ONLY;
	if (proto_get_flags(r, &q->flags, allowed, "fs", err) < 0)
		return -1;
	if (get_globs(r, &q->include, "include", err) < 0)
		return -1;
	return get_globs(r, &q->exclude, "exclude", err);
}

/* ---- results ---- */

/* Reads the item count and allocates the items; `min` is the smallest
 * encoding of one item, so a count the payload cannot hold is refused
 * before anything is allocated. */
static void *get_batch(struct proto_rbuf *r, uint32_t *n, size_t size, size_t min, sbx_error_t *err)
{
	if (proto_get_u32(r, n, err) < 0)
		return sbx_error_prefix(err, "count"), NULL;
	if (*n == 0 || *n > PROTO_FS_MAX_BATCH || (size_t)*n * min > r->len - r->off) {
		sbx_error_set(err, 0, "batch of %u items invalid (1..%u that fit the payload)", *n, PROTO_FS_MAX_BATCH);
		*n = 0;
		return NULL;
	}
	void *v = calloc(*n, size);
	if (v == NULL) {
		*n = 0;
		sbx_error_set(err, 0, "out of memory");
	}
	return v;
}

static int decode_entry(struct proto_rbuf *r, struct proto_fs_entry *e, sbx_error_t *err)
{
	if (proto_get_path(r, &e->name, "name", err) < 0)
		return -1;
	if (proto_get_mode(r, &e->mode, err) < 0)
		return -1;
	if (proto_get_flags(r, &e->flags, PROTO_FS_ENTRY_DIR | PROTO_FS_ENTRY_SYMLINK, "fs", err) < 0)
		return -1;
	if (proto_get_u64(r, &e->size, err) < 0)
		return -1;
	return get_i64(r, &e->mtime, err);
}

static int decode_entries(struct proto_rbuf *r, struct proto_fs_batch *b, sbx_error_t *err)
{
	b->v.entries = get_batch(r, &b->n, sizeof(*b->v.entries), 28, err);
	if (b->v.entries == NULL)
		return -1;
	for (uint32_t i = 0; i < b->n; i++) {
		if (decode_entry(r, &b->v.entries[i], err) < 0)
			return sbx_error_prefix(err, "entry %u", i);
	}
	return 0;
}

static int decode_matches(struct proto_rbuf *r, struct proto_fs_batch *b, sbx_error_t *err)
{
	b->v.matches = get_batch(r, &b->n, sizeof(*b->v.matches), 16, err);
	if (b->v.matches == NULL)
		return -1;
	for (uint32_t i = 0; i < b->n; i++) {
		struct proto_fs_match *m = &b->v.matches[i];
		if (proto_get_path(r, &m->path, "path", err) < 0)
			return sbx_error_prefix(err, "match %u", i);
		if (proto_get_u64(r, &m->line, err) < 0)
			return sbx_error_prefix(err, "match %u", i);
		if (proto_get_str(r, &m->content, err) < 0)
			return sbx_error_prefix(err, "match %u", i);
		if (m->line == 0 || strlen(m->content) > PROTO_FS_MAX_CONTENT)
			return sbx_error_set(err, 0, "match %u: line 0 or content over %u bytes", i,
					     PROTO_FS_MAX_CONTENT);
	}
	return 0;
}

static int decode_sed_file(struct proto_rbuf *r, struct proto_fs_sed_file *f, sbx_error_t *err)
{
	if (proto_get_path(r, &f->path, "path", err) < 0)
		return -1;
	if (proto_get_u64(r, &f->replacements, err) < 0)
		return -1;
	if (proto_get_i32(r, &f->errnum, err) < 0)
		return -1;
	return proto_get_str(r, &f->error, err);
}

static int decode_sed_files(struct proto_rbuf *r, struct proto_fs_batch *b, sbx_error_t *err)
{
	b->v.files = get_batch(r, &b->n, sizeof(*b->v.files), 20, err);
	if (b->v.files == NULL)
		return -1;
	for (uint32_t i = 0; i < b->n; i++) {
		struct proto_fs_sed_file *f = &b->v.files[i];
		if (decode_sed_file(r, f, err) < 0)
			return sbx_error_prefix(err, "file %u", i);
		if (f->errnum < 0 || (f->errnum == 0) != (f->error[0] == '\0'))
			return sbx_error_set(err, 0, "file %u: errno %d and error text disagree", i, f->errnum);
	}
	return 0;
}

int proto_fs_decode_body(struct proto_rbuf *r, struct proto_msg *m, sbx_error_t *err)
{
	switch (m->type) {
	case PROTO_FS_LS:
	case PROTO_FS_STAT:
	case PROTO_FS_READ:
		return proto_get_path(r, &m->u.fs_path.path, "path", err);
	case PROTO_FS_MKDIR:
		return decode_mkdir(r, &m->u.fs_mkdir, err);
	case PROTO_FS_RM:
		if (proto_get_path(r, &m->u.fs_rm.path, "path", err) < 0)
			return -1;
		return proto_get_flags(r, &m->u.fs_rm.flags, PROTO_FS_RECURSIVE, "fs", err);
	case PROTO_FS_CHMOD:
		return decode_chmod(r, &m->u.fs_chmod, err);
	case PROTO_FS_MV:
		return decode_mv(r, &m->u.fs_mv, err);
	case PROTO_FS_GREP:
		return decode_grep(r, &m->u.fs_grep, err);
	case PROTO_FS_SED:
		return decode_sed(r, &m->u.fs_sed, err);
	case PROTO_FS_ENTRIES:
		return decode_entries(r, &m->u.fs_batch, err);
	case PROTO_FS_MATCHES:
		return decode_matches(r, &m->u.fs_batch, err);
	case PROTO_FS_SED_FILES:
		return decode_sed_files(r, &m->u.fs_batch, err);
	case PROTO_FS_META:
		if (proto_get_u64(r, &m->u.fs_meta.size, err) < 0)
			return -1;
		if (proto_get_mode(r, &m->u.fs_meta.mode, err) < 0)
			return -1;
		return get_i64(r, &m->u.fs_meta.mtime, err);
	case PROTO_FS_DONE:
		if (proto_get_u64(r, &m->u.fs_done.count, err) < 0)
			return -1;
		return proto_get_flags(r, &m->u.fs_done.flags, PROTO_FS_TRUNCATED, "fs", err);
	}
	return sbx_error_set(err, 0, PROTO_TEXT_UNSUPPORTED " 0x%02x", m->type);
}

void proto_fs_free(struct proto_msg *m)
{
	switch (m->type) {
	case PROTO_FS_LS:
	case PROTO_FS_STAT:
	case PROTO_FS_READ:
		free(m->u.fs_path.path);
		break;
	case PROTO_FS_MKDIR:
		free(m->u.fs_mkdir.path);
		break;
	case PROTO_FS_RM:
		free(m->u.fs_rm.path);
		break;
	case PROTO_FS_CHMOD:
		free(m->u.fs_chmod.path);
		break;
	case PROTO_FS_MV:
		free(m->u.fs_mv.src);
		free(m->u.fs_mv.dst);
		break;
	case PROTO_FS_GREP:
		free(m->u.fs_grep.path);
		free(m->u.fs_grep.pattern);
		sbx_strv_free(m->u.fs_grep.include);
		sbx_strv_free(m->u.fs_grep.exclude);
		break;
	case PROTO_FS_SED:
		sbx_strv_free(m->u.fs_sed.files);
		free(m->u.fs_sed.path);
		free(m->u.fs_sed.pattern);
		free(m->u.fs_sed.replacement);
		sbx_strv_free(m->u.fs_sed.include);
		sbx_strv_free(m->u.fs_sed.exclude);
		break;
	case PROTO_FS_ENTRIES:
		for (uint32_t i = 0; m->u.fs_batch.v.entries != NULL && i < m->u.fs_batch.n; i++)
			free(m->u.fs_batch.v.entries[i].name);
		free(m->u.fs_batch.v.entries);
		break;
	case PROTO_FS_MATCHES:
		for (uint32_t i = 0; m->u.fs_batch.v.matches != NULL && i < m->u.fs_batch.n; i++) {
			free(m->u.fs_batch.v.matches[i].path);
			free(m->u.fs_batch.v.matches[i].content);
		}
		free(m->u.fs_batch.v.matches);
		break;
	case PROTO_FS_SED_FILES:
		for (uint32_t i = 0; m->u.fs_batch.v.files != NULL && i < m->u.fs_batch.n; i++) {
			free(m->u.fs_batch.v.files[i].path);
			free(m->u.fs_batch.v.files[i].error);
		}
		free(m->u.fs_batch.v.files);
		break;
	}
}

/* ---- encoders: refuse what the decoders would refuse ---- */

static int put_path(struct proto_wbuf *b, const char *p, const char *what, sbx_error_t *err)
{
	if (!valid_path(p))
		return sbx_error_set(err, 0, "%s missing, empty or longer than %u bytes", what, PROTO_MAX_PATH);
	proto_put_str(b, p);
	return 0;
}

static int put_str(struct proto_wbuf *b, const char *s, size_t max, const char *what, sbx_error_t *err)
{
	if (s == NULL)
		s = "";
	if (strlen(s) > max)
		return sbx_error_set(err, 0, "%s longer than %zu bytes", what, max);
	proto_put_str(b, s);
	return 0;
}

static int put_globs(struct proto_wbuf *b, char **v, const char *what, sbx_error_t *err)
{
	size_t n = sbx_strv_len(v);
	if (n > PROTO_FS_MAX_GLOBS)
		return sbx_error_set(err, 0, "%s has more than %u patterns", what, PROTO_FS_MAX_GLOBS);
	proto_put_u32(b, (uint32_t)n);
	for (size_t i = 0; i < n; i++)
		if (put_path(b, v[i], what, err) < 0)
			return -1;
	return 0;
}

static int encode_batch(struct proto_wbuf *b, const struct proto_msg *m, sbx_error_t *err)
{
	const struct proto_fs_batch *bt = &m->u.fs_batch;
	if (bt->n == 0 || bt->n > PROTO_FS_MAX_BATCH)
		return sbx_error_set(err, 0, "batch of %u items (1..%u)", bt->n, PROTO_FS_MAX_BATCH);
	proto_put_u32(b, bt->n);
	for (uint32_t i = 0; i < bt->n; i++) {
		if (m->type == PROTO_FS_ENTRIES) {
			const struct proto_fs_entry *e = &bt->v.entries[i];
			if (put_path(b, e->name, "name", err) < 0)
				return -1;
			proto_put_u32(b, e->mode & 07777);
			proto_put_u32(b, e->flags);
			proto_put_u64(b, e->size);
			proto_put_u64(b, (uint64_t)e->mtime);
		} else if (m->type == PROTO_FS_MATCHES) {
			const struct proto_fs_match *x = &bt->v.matches[i];
			if (put_path(b, x->path, "path", err) < 0)
				return -1;
			proto_put_u64(b, x->line);
			if (put_str(b, x->content, PROTO_FS_MAX_CONTENT, "content", err) < 0)
				return -1;
		} else {
			const struct proto_fs_sed_file *f = &bt->v.files[i];
			if (put_path(b, f->path, "path", err) < 0)
				return -1;
			proto_put_u64(b, f->replacements);
			proto_put_i32(b, f->errnum);
			if (put_str(b, f->errnum != 0 ? f->error : "", PROTO_MAX_STR, "error", err) < 0)
				return -1;
		}
	}
	return 0;
}

int proto_fs_encode_body(struct proto_wbuf *b, const struct proto_msg *m, sbx_error_t *err)
{
	switch (m->type) {
	case PROTO_FS_LS:
	case PROTO_FS_STAT:
	case PROTO_FS_READ:
		return put_path(b, m->u.fs_path.path, "path", err);
	case PROTO_FS_MKDIR:
		if (put_path(b, m->u.fs_mkdir.path, "path", err) < 0)
			return -1;
		proto_put_u32(b, m->u.fs_mkdir.mode);
		proto_put_u32(b, m->u.fs_mkdir.flags);
		return 0;
	case PROTO_FS_RM:
		if (put_path(b, m->u.fs_rm.path, "path", err) < 0)
			return -1;
		proto_put_u32(b, m->u.fs_rm.flags);
		return 0;
	case PROTO_FS_CHMOD: {
		const struct proto_fs_chmod *q = &m->u.fs_chmod;
		if (put_path(b, q->path, "path", err) < 0)
			return -1;
		proto_put_u32(b, q->mode);
		proto_put_u32(b, q->flags);
		proto_put_u32(b, q->uid);
		proto_put_u32(b, q->gid);
		return 0;
	}
	case PROTO_FS_MV:
		if (put_path(b, m->u.fs_mv.src, "src", err) < 0)
			return -1;
		if (put_path(b, m->u.fs_mv.dst, "dst", err) < 0)
			return -1;
		proto_put_u32(b, m->u.fs_mv.flags);
		return 0;
	case PROTO_FS_GREP: {
		const struct proto_fs_grep *q = &m->u.fs_grep;
		if (put_path(b, q->path, "path", err) < 0)
			return -1;
		if (put_str(b, q->pattern, PROTO_MAX_STR, "pattern", err) < 0)
			return -1;
		proto_put_u32(b, q->flags);
		if (put_globs(b, q->include, "include", err) < 0)
			return -1;
		if (put_globs(b, q->exclude, "exclude", err) < 0)
			return -1;
		proto_put_u64(b, q->max_matches);
		proto_put_u64(b, q->max_line_bytes);
		return 0;
	}
	case PROTO_FS_SED: {
		const struct proto_fs_sed *q = &m->u.fs_sed;
		if (sbx_strv_len(q->files) > PROTO_MAX_STRV)
			return sbx_error_set(err, 0, "more than %u files", PROTO_MAX_STRV);
		proto_put_u32(b, (uint32_t)sbx_strv_len(q->files));
		for (size_t i = 0; q->files != NULL && q->files[i] != NULL; i++)
			if (put_path(b, q->files[i], "files entry", err) < 0)
				return -1;
		if (put_str(b, q->path, PROTO_MAX_PATH, "path", err) < 0)
			return -1;
		if (put_str(b, q->pattern, PROTO_MAX_STR, "pattern", err) < 0)
			return -1;
		if (put_str(b, q->replacement, PROTO_MAX_STR, "replacement", err) < 0)
			return -1;
		proto_put_u32(b, q->flags);
		if (put_globs(b, q->include, "include", err) < 0)
			return -1;
		return put_globs(b, q->exclude, "exclude", err);
	}
	case PROTO_FS_ENTRIES:
	case PROTO_FS_MATCHES:
	case PROTO_FS_SED_FILES:
		return encode_batch(b, m, err);
	case PROTO_FS_META:
		proto_put_u64(b, m->u.fs_meta.size);
		proto_put_u32(b, m->u.fs_meta.mode & 07777);
		proto_put_u64(b, (uint64_t)m->u.fs_meta.mtime);
		return 0;
	case PROTO_FS_DONE:
		proto_put_u64(b, m->u.fs_done.count);
		proto_put_u32(b, m->u.fs_done.flags);
		return 0;
	}
	return sbx_error_set(err, 0, "cannot encode message type 0x%02x", m->type);
}
