/* fs::ls and fs::stat: lstat semantics, entries in readdir order. */
#include "guest/fs_ops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cleanup.h"
#include "guest/fs_util.h"

int fs_ls(const struct proto_fs_path *q, struct fs_reply *r, sbx_error_t *err)
{
	struct stat st;
	if (lstat(q->path, &st) < 0)
		return fs_path_error(err, errno, q->path);
	if (!S_ISDIR(st.st_mode))
		return fs_path_error(err, ENOTDIR, q->path);
	int fd = open(q->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return fs_path_error(err, errno, q->path);
	cleanup_dir DIR *d = fdopendir(fd);
	if (d == NULL) {
		int e = errno;
		close(fd);
		return fs_path_error(err, e, q->path);
	}
	uint64_t count = 0;
	for (;;) {
		errno = 0;
		struct dirent *de = readdir(d);
		if (de == NULL) {
			if (errno != 0)
				return fs_path_error(err, errno, q->path);
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT) /* vanished mid-listing */
				continue;
			return fs_path_error(err, errno, q->path);
		}
		struct proto_fs_entry e;
		fs_entry_from_stat(&e, de->d_name, &st);
		if (fs_reply_entry(r, &e, err) < 0)
			return -1;
		count++;
	}
	return fs_reply_done(r, count, 0, err);
}

int fs_stat(const struct proto_fs_path *q, struct fs_reply *r, sbx_error_t *err)
{
	struct stat st;
	if (lstat(q->path, &st) < 0)
		return fs_path_error(err, errno, q->path);
	char buf[PROTO_MAX_PATH + 1];
	struct proto_fs_entry e;
	fs_entry_from_stat(&e, fs_last_component(q->path, buf, sizeof(buf)), &st);
	if (fs_reply_entry(r, &e, err) < 0)
		return -1;
	return fs_reply_done(r, 1, 0, err);
}
