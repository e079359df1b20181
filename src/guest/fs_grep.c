/* fs::grep: PCRE2 over the lines of a file or a tree (proto.h, FS_GREP). */
#include "guest/fs_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "guest/fs_lines.h"
#include "guest/fs_regex.h"
#include "guest/fs_targets.h"
#include "guest/fs_util.h"
#include "guest/fs_walk.h"

#define GREP_BINARY_PROBE 8192u

struct grep {
	const struct proto_fs_grep *q;
	struct fs_regex re;
	struct fs_reply *r;
	uint64_t matches;
	bool truncated;
	size_t content_max; /* bytes of a reported line before the ellipsis */
};

/* Reports one matching line, cut at a UTF-8 boundary with "…" when long. */
static int report(struct grep *g, const char *path, uint64_t lineno, const char *line, size_t len, bool cut,
		  sbx_error_t *err)
{
	char content[PROTO_FS_MAX_CONTENT + 1];
	size_t n = len;
	if (n > g->content_max) {
		n = fs_utf8_boundary(line, g->content_max);
		cut = true;
	}
	memcpy(content, line, n);
	if (cut) {
		memcpy(content + n, "\xe2\x80\xa6", 3);
		n += 3;
	}
	content[n] = '\0';
	if (fs_reply_match(g->r, path, lineno, content, err) < 0)
		return -1;
	g->matches++;
	if (g->q->max_matches != 0 && g->matches >= g->q->max_matches) {
		g->truncated = true;
		return FS_WALK_STOP;
	}
	return 0;
}

/* A NUL in the first 8 KiB marks a binary file.  Leaves fd at 0. */
static int is_binary(int fd, const char *path, bool *binary, sbx_error_t *err)
{
	char probe[GREP_BINARY_PROBE];
	ssize_t n;
	do
		n = pread(fd, probe, sizeof(probe), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return fs_path_error(err, errno, path);
	*binary = memchr(probe, '\0', (size_t)n) != NULL;
	return 0;
}

static int grep_file(void *ctx, int dirfd, const char *name, const char *path, sbx_error_t *err)
{
	struct grep *g = ctx;
	cleanup_close int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : fs_path_error(err, errno, path);
	bool binary;
	if (is_binary(fd, path, &binary, err) < 0)
		return -1;
	if (binary)
		return 0;
	struct fs_lines l;
	fs_lines_init(&l, fd, path, PROTO_FS_SCAN_LINE);
	int rc = 0;
	const char *line;
	size_t len;
	bool nl, cut;
	for (uint64_t lineno = 1; rc == 0; lineno++) {
		int got = fs_lines_next(&l, &line, &len, &nl, &cut, err);
		if (got <= 0) {
			rc = got;
			break;
		}
		if (!cut && len > 0 && line[len - 1] == '\r')
			len--;
		if (cut) /* searched as far as kept; drop a split character */
			len = fs_utf8_boundary(line, len);
		if (!fs_utf8_valid(line, len))
			continue;
		size_t ms, me;
		int found = fs_regex_find(&g->re, line, len, 0, &ms, &me, err);
		if (found < 0) {
			sbx_error_prefix(err, "%s line %llu", path, (unsigned long long)lineno);
			rc = -1;
		} else if (found) {
			rc = report(g, path, lineno, line, len, cut, err);
		}
	}
	fs_lines_free(&l);
	return rc;
}

int fs_grep(const struct proto_fs_grep *q, struct fs_reply *r, sbx_error_t *err)
{
	struct fs_target t;
	if (fs_target_open(&t, q->path, err) < 0) {
		fs_target_free(&t);
		return -1;
	}
	struct grep g = { .q = q, .r = r, .content_max = PROTO_FS_MAX_CONTENT - 3 };
	if (q->max_line_bytes != 0 && q->max_line_bytes < g.content_max)
		g.content_max = (size_t)q->max_line_bytes;
	int rc = fs_regex_compile(&g.re, q->pattern, false, q->flags & PROTO_FS_IGNORE_CASE, err);
	if (rc == 0)
		rc = fs_target_each_file(&t, q->flags & PROTO_FS_RECURSIVE, q->include, q->exclude, grep_file, &g, err);
	if (rc == 0)
		rc = fs_reply_done(r, g.matches, g.truncated ? PROTO_FS_TRUNCATED : 0, err);
	fs_regex_free(&g.re);
	fs_target_free(&t);
	return rc;
}
