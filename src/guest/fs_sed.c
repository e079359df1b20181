/* fs::sed: line-by-line replacement, each file rewritten through a temp
 * sibling (mode and owner kept) renamed over it (proto.h, FS_SED).  Memory
 * stays bounded by FS_SED_MAX_LINE whatever the file or the expansion. */
#include "guest/fs_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "guest/fs_lines.h"
#include "guest/fs_regex.h"
#include "guest/fs_targets.h"
#include "guest/fs_util.h"
#include "guest/fs_walk.h"

#define FS_SED_MAX_LINE (8u * 1024u * 1024u)

struct sed {
	const struct proto_fs_sed *q;
	bool use_regex; /* else a case-sensitive byte search */
	bool expand;    /* $-groups in the replacement */
	struct fs_regex re;
	struct fs_reply *r;
	uint64_t total;
};

struct out {
	int fd;
	const char *path;
	size_t len;
	char buf[64 * 1024];
};

static int out_flush(struct out *o, sbx_error_t *err)
{
	for (size_t off = 0; off < o->len;) {
		ssize_t k = write(o->fd, o->buf + off, o->len - off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return fs_path_error(err, errno, o->path);
		off += (size_t)k;
	}
	o->len = 0;
	return 0;
}

static int out_put(struct out *o, const char *p, size_t n, sbx_error_t *err)
{
	while (n > 0) {
		if (o->len == sizeof(o->buf) && out_flush(o, err) < 0)
			return -1;
		size_t k = sizeof(o->buf) - o->len;
		if (k > n)
			k = n;
		memcpy(o->buf + o->len, p, k);
		o->len += k;
		p += k;
		n -= k;
	}
	return 0;
}

static int put_group(struct sed *s, struct out *o, const char *line, int group, sbx_error_t *err)
{
	size_t gs, ge;
	if (group < 0 || !fs_regex_group(&s->re, (size_t)group, &gs, &ge))
		return 0; /* an unknown or unset group expands to nothing */
	return out_put(o, line + gs, ge - gs, err);
}

static bool name_char(char c)
{
	return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Writes the replacement for the current match: $$, $N, ${N}, $name,
 * ${name}; a '$' that starts none of these is literal. */
static int put_replacement(struct sed *s, struct out *o, const char *line, sbx_error_t *err)
{
	const char *rep = s->q->replacement;
	if (!s->expand)
		return out_put(o, rep, strlen(rep), err);
	while (*rep != '\0') {
		const char *dollar = strchr(rep, '$');
		size_t lit = dollar != NULL ? (size_t)(dollar - rep) : strlen(rep);
		if (out_put(o, rep, lit, err) < 0)
			return -1;
		if (dollar == NULL)
			return 0;
		const char *p = dollar + 1, *name = p, *end;
		if (*p == '$') {
			if (out_put(o, "$", 1, err) < 0)
				return -1;
			rep = p + 1;
			continue;
		}
		if (*p == '{') {
			name = p + 1;
			end = strchr(name, '}');
			if (end == NULL || end == name) {
				if (out_put(o, "$", 1, err) < 0)
					return -1;
				rep = p;
				continue;
			}
			rep = end + 1;
		} else {
			end = p;
			while (name_char(*end))
				end++;
			if (end == p) {
				if (out_put(o, "$", 1, err) < 0)
					return -1;
				rep = p;
				continue;
			}
			rep = end;
		}
		char buf[256];
		size_t n = (size_t)(end - name);
		if (n >= sizeof(buf))
			continue; /* no group has such a name */
		memcpy(buf, name, n);
		buf[n] = '\0';
		int group;
		if (strspn(buf, "0123456789") == n)
			group = n > 6 ? -1 : atoi(buf);
		else
			group = fs_regex_group_number(&s->re, buf);
		if (put_group(s, o, line, group, err) < 0)
			return -1;
	}
	return 0;
}

static size_t char_len(const char *s, size_t at, size_t n)
{
	size_t k = 1;
	while (at + k < n && ((unsigned char)s[at + k] & 0xc0) == 0x80)
		k++;
	return k;
}

/* Next match at or after pos: 1 found, 0 none, -1 error. */
static int find(struct sed *s, const char *line, size_t n, size_t pos, size_t *ms, size_t *me, sbx_error_t *err)
{
	if (s->use_regex)
		return fs_regex_find(&s->re, line, n, pos, ms, me, err);
	size_t plen = strlen(s->q->pattern);
	const char *hit = memmem(line + pos, n - pos, s->q->pattern, plen);
	if (hit == NULL)
		return 0;
	*ms = (size_t)(hit - line);
	*me = *ms + plen;
	return 1;
}

/* Rewrites one line (without its '\n') into o; counts replacements. */
static int sed_line(struct sed *s, struct out *o, const char *line, size_t n, uint64_t *count, sbx_error_t *err)
{
	size_t pos = 0, copied = 0, prev_end = SIZE_MAX;
	while (pos <= n) {
		size_t ms, me;
		int found = find(s, line, n, pos, &ms, &me, err);
		if (found < 0)
			return -1;
		if (found == 0)
			break;
		if (ms == me && ms == prev_end) {
			/* no empty match right after a match (as Rust's regex) */
			if (ms >= n)
				break;
			pos = ms + char_len(line, ms, n);
			continue;
		}
		if (out_put(o, line + copied, ms - copied, err) < 0 || put_replacement(s, o, line, err) < 0)
			return -1;
		(*count)++;
		copied = prev_end = me;
		if (s->q->flags & PROTO_FS_FIRST_ONLY)
			break;
		if (me == ms) {
			if (me >= n)
				break;
			pos = me + char_len(line, me, n);
		} else {
			pos = me;
		}
	}
	return out_put(o, line + copied, n - copied, err);
}

/* Streams the file through the replacement into the open temp file. */
static int rewrite(struct sed *s, int in, struct out *o, const char *path, uint64_t *count, sbx_error_t *err)
{
	struct fs_lines l;
	fs_lines_init(&l, in, path, FS_SED_MAX_LINE);
	int rc = 0;
	for (;;) {
		const char *line;
		size_t len;
		bool nl, cut;
		int got = fs_lines_next(&l, &line, &len, &nl, &cut, err);
		if (got <= 0) {
			rc = got;
			break;
		}
		if (cut) {
			rc = sbx_error_set(err, EFBIG, "line longer than %u bytes: %s", FS_SED_MAX_LINE, path);
			break;
		}
		if (!fs_utf8_valid(line, len)) {
			rc = sbx_error_set(err, EILSEQ, "not valid UTF-8: %s", path);
			break;
		}
		if (sed_line(s, o, line, len, count, err) < 0 || (nl && out_put(o, "\n", 1, err) < 0)) {
			rc = -1;
			break;
		}
	}
	fs_lines_free(&l);
	return rc < 0 ? -1 : out_flush(o, err);
}

/* One file, dirfd/name as to openat().  Returns -1 only when the result
 * cannot be sent; a failing file is a result. */
static int sed_file(void *ctx, int dirfd, const char *name, const char *path, sbx_error_t *err)
{
	struct sed *s = ctx;
	sbx_error_t ferr = NULL;
	uint64_t count = 0;
	struct stat st;
	cleanup_free char *tmp = NULL;
	cleanup_free struct out *o = malloc(sizeof(*o));
	cleanup_close int in = openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (o == NULL) {
		sbx_error_errno(&ferr, ENOMEM, "%s", path);
	} else if (in < 0 || fstat(in, &st) < 0) {
		fs_path_error(&ferr, errno, path);
	} else if (!S_ISREG(st.st_mode)) {
		sbx_error_set(&ferr, S_ISDIR(st.st_mode) ? EISDIR : PROTO_FS_EWRONGTYPE, "not a regular file: %s",
			      path);
	} else if ((tmp = fs_temp_sibling(name, &ferr)) != NULL) {
		int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0) {
			fs_path_error(&ferr, errno, path);
		} else {
			o->fd = fd;
			o->path = path;
			o->len = 0;
			int rc = rewrite(s, in, o, path, &count, &ferr);
			if (rc == 0 && fchmod(fd, st.st_mode & 07777) < 0)
				rc = fs_path_error(&ferr, errno, path);
			/* as root the owner is kept; otherwise it is ours anyway */
			if (rc == 0 && fchown(fd, st.st_uid, st.st_gid) < 0 && errno != EPERM)
				rc = fs_path_error(&ferr, errno, path);
			if (close(fd) < 0 && rc == 0)
				rc = fs_path_error(&ferr, errno, path);
			if (rc == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
				rc = fs_path_error(&ferr, errno, path);
			if (rc < 0)
				unlinkat(dirfd, tmp, 0);
		}
	}
	int rc;
	if (ferr != NULL) {
		rc = fs_reply_sed_file(s->r, path, 0, ferr->errnum > 0 ? ferr->errnum : EIO, sbx_error_msg(ferr), err);
		sbx_error_free(&ferr);
	} else {
		s->total += count;
		rc = fs_reply_sed_file(s->r, path, count, 0, "", err);
	}
	return rc;
}

static int sed_listed(struct sed *s, sbx_error_t *err)
{
	for (size_t i = 0; s->q->files[i] != NULL; i++) {
		const char *path = s->q->files[i];
		/* A listed symlink is edited where it points, not replaced. */
		cleanup_free char *real = realpath(path, NULL);
		if (real == NULL) {
			sbx_error_t ferr = NULL;
			fs_path_error(&ferr, errno, path);
			int rc = fs_reply_sed_file(s->r, path, 0, ferr->errnum, sbx_error_msg(ferr), err);
			sbx_error_free(&ferr);
			if (rc < 0)
				return -1;
			continue;
		}
		if (sed_file(s, AT_FDCWD, real, path, err) < 0)
			return -1;
	}
	return 0;
}

int fs_sed(const struct proto_fs_sed *q, struct fs_reply *r, sbx_error_t *err)
{
	bool regex = q->flags & PROTO_FS_REGEX, icase = q->flags & PROTO_FS_IGNORE_CASE;
	if (!regex && q->pattern[0] == '\0')
		return sbx_error_set(err, PROTO_FS_EINVALID, "pattern is empty");
	struct sed s = { .q = q, .r = r, .use_regex = regex || icase, .expand = regex };
	struct fs_target t = { 0 };
	int rc = 0;
	if (q->path[0] != '\0' && (fs_target_open(&t, q->path, err) < 0 ||
				   fs_target_check(&t, q->flags & PROTO_FS_RECURSIVE, err) < 0))
		rc = -1;
	if (rc == 0 && s.use_regex)
		rc = fs_regex_compile(&s.re, q->pattern, !regex, icase, err);
	if (rc == 0 && q->path[0] != '\0')
		rc = fs_target_each_file(&t, q->flags & PROTO_FS_RECURSIVE, q->include, q->exclude, sed_file, &s, err);
	else if (rc == 0)
		rc = sed_listed(&s, err);
	if (rc == 0)
		rc = fs_reply_done(r, s.total, 0, err);
	if (s.use_regex)
		fs_regex_free(&s.re);
	fs_target_free(&t);
	return rc;
}
