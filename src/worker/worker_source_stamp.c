#include "worker/worker_source_stamp.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cleanup.h"
#include "image/digest.h"

struct walk {
	struct sbx_sha256 *h;
	size_t entries;
};

/* One entry's record; fixed-size fields, so no two trees hash alike by
 * shifting bytes between names and numbers. */
struct entry_meta {
	uint64_t mode, uid, gid, size, ino, mtime_s, mtime_ns, ctime_s, ctime_ns;
};

static int add_entry(struct walk *w, const char *name, const struct stat *st, sbx_error_t *err)
{
	if (++w->entries > WORKER_STAMP_MAX_ENTRIES)
		return sbx_error_set(err, EFBIG, "more than %d entries", WORKER_STAMP_MAX_ENTRIES);
	struct entry_meta m = {
		(uint64_t)st->st_mode, (uint64_t)st->st_uid, (uint64_t)st->st_gid,
		(uint64_t)st->st_size, (uint64_t)st->st_ino, (uint64_t)st->st_mtim.tv_sec,
		(uint64_t)st->st_mtim.tv_nsec, (uint64_t)st->st_ctim.tv_sec, (uint64_t)st->st_ctim.tv_nsec,
	};
	if (sbx_sha256_update(w->h, name, strlen(name) + 1, err) < 0)
		return -1;
	return sbx_sha256_update(w->h, &m, sizeof(m), err);
}

/* Hashes dir's entries, descending into directories; a byte closes each
 * directory so that a file's place in the tree is part of the hash. */
static int walk_dir(struct walk *w, int dfd, unsigned depth, sbx_error_t *err)
{
	if (depth > WORKER_STAMP_MAX_DEPTH)
		return sbx_error_set(err, ELOOP, "deeper than %d directories", WORKER_STAMP_MAX_DEPTH);
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return sbx_error_errno(err, errno, "open directory");
	cleanup_dir DIR *d = fdopendir(fd);
	if (d == NULL) {
		int e = errno;
		close(fd);
		return sbx_error_errno(err, e, "open directory");
	}
	struct dirent *de;
	for (errno = 0; (de = readdir(d)) != NULL; errno = 0) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return sbx_error_errno(err, errno, "stat %s", de->d_name);
		if (add_entry(w, de->d_name, &st, err) < 0)
			return -1;
		if (!S_ISDIR(st.st_mode))
			continue;
		cleanup_close int sub = openat(dirfd(d), de->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			return sbx_error_errno(err, errno, "open %s", de->d_name);
		if (walk_dir(w, sub, depth + 1, err) < 0)
			return sbx_error_prefix(err, "%s", de->d_name);
	}
	if (errno != 0)
		return sbx_error_errno(err, errno, "read directory");
	static const char end = '/';
	return sbx_sha256_update(w->h, &end, 1, err);
}

/* The root's own entry, then the tree under it, then the digest. */
static int stamp_tree(struct walk *w, int root, char digest[SBX_DIGEST_LEN + 1], sbx_error_t *err)
{
	struct stat st;
	if (fstat(root, &st) < 0)
		return sbx_error_errno(err, errno, "stat the source");
	if (add_entry(w, "", &st, err) < 0)
		return -1;
	if (walk_dir(w, root, 0, err) < 0)
		return -1;
	return sbx_sha256_final(w->h, digest, err);
}

int worker_source_stamp(int root, char hex[65], sbx_error_t *err)
{
	struct walk w = { sbx_sha256_new(err), 0 };
	if (w.h == NULL)
		return -1;
	char digest[SBX_DIGEST_LEN + 1];
	int rc = stamp_tree(&w, root, digest, err);
	sbx_sha256_free(w.h);
	if (rc < 0)
		return sbx_error_prefix(err, "source stamp");
	memcpy(hex, sbx_digest_hex(digest), 65);
	return 0;
}
