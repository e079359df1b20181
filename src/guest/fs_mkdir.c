/* fs::mkdir: an existing path is EEXIST, or "not created" with parents;
 * the leaf gets the mode exactly, intermediates 0755. */
#include "guest/fs_ops.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cleanup.h"
#include "guest/fs_util.h"

/* mkdir -p of every ancestor of path. */
static int make_ancestors(const char *path, sbx_error_t *err)
{
	cleanup_free char *dir = strdup(path);
	if (dir == NULL)
		return sbx_error_errno(err, ENOMEM, "%s", path);
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		dir[--n] = '\0';
	char *last = strrchr(dir, '/');
	if (last == NULL || last == dir)
		return 0;
	*last = '\0';
	for (char *p = dir + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return fs_path_error(err, errno, dir);
		/* an existing non-directory in the way */
		struct stat st;
		if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
			return fs_path_error(err, ENOTDIR, dir);
		if (c == '\0')
			return 0;
		*p = c;
	}
}

int fs_mkdir(const struct proto_fs_mkdir *q, struct fs_reply *r, sbx_error_t *err)
{
	struct stat st;
	if (lstat(q->path, &st) == 0) {
		if (q->flags & PROTO_FS_PARENTS)
			return fs_reply_done(r, 0, 0, err);
		return fs_path_error(err, EEXIST, q->path);
	}
	if (errno != ENOENT)
		return fs_path_error(err, errno, q->path);
	if ((q->flags & PROTO_FS_PARENTS) && make_ancestors(q->path, err) < 0)
		return -1;
	if (mkdir(q->path, 0700) < 0)
		return fs_path_error(err, errno, q->path);
	/* chmod, not the mkdir mode: the umask must not apply */
	if (chmod(q->path, q->mode) < 0)
		return fs_path_error(err, errno, q->path);
	return fs_reply_done(r, 1, 0, err);
}
