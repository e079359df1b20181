#include "image/layer_apply.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "image/layer_internal.h"
#include "image/path_set.h"
#include "image/store_space.h"
#include "image/tar_path.h"


static int write_data(struct archive *a, int fd, int64_t size, sbx_error_t *err)
{
	const void *buf;
	size_t len;
	la_int64_t off;
	for (;;) {
		int rc = archive_read_data_block(a, &buf, &len, &off);
		if (rc == ARCHIVE_EOF)
			break;
		if (rc != ARCHIVE_OK)
			return sbx_error_set(err, 0, "layer data: %s", archive_error_string(a));
		if (off < 0 || (uint64_t)off + len > (uint64_t)size)
			return sbx_error_set(err, 0, "layer data beyond the entry's size");
		while (len > 0) {
			ssize_t n = pwrite(fd, buf, len, off);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return sbx_error_errno(err, n < 0 ? errno : EIO, "write");
			buf = (const char *)buf + n;
			len -= (size_t)n;
			off += n;
		}
	}
	/* Sparse files may end in a hole. */
	if (ftruncate(fd, size) < 0)
		return sbx_error_errno(err, errno, "truncate");
	return 0;
}

static int set_xattrs(int pfd, const char *name, struct archive_entry *e, sbx_error_t *err)
{
	const char *key;
	const void *value;
	size_t size;
	if (archive_entry_xattr_reset(e) == 0)
		return 0;
	char proc[64 + 256];
	if (snprintf(proc, sizeof(proc), "/proc/self/fd/%d/%s", pfd, name) >= (int)sizeof(proc))
		return sbx_error_set(err, ENAMETOOLONG, "name too long for xattrs: '%s'", name);
	while (archive_entry_xattr_next(e, &key, &value, &size) == ARCHIVE_OK) {
		/* The host's overlayfs must never see overlay metadata from an image. */
		if (strncmp(key, "trusted.overlay.", 16) == 0)
			continue;
		if (lsetxattr(proc, key, value, size, 0) < 0 && errno != ENOTSUP)
			return sbx_error_errno(err, errno, "set xattr '%s' on '%s'", key, name);
	}
	return 0;
}

static int set_owner_mode(struct sbx_rootfs *r, int pfd, const char *name, struct archive_entry *e, bool link,
			  sbx_error_t *err)
{
	if (fchownat(pfd, name, (uid_t)archive_entry_uid(e), (gid_t)archive_entry_gid(e), AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != EPERM)
			return sbx_error_errno(err, errno, "chown '%s'", name);
		if (!r->warned_owner)
			sbx_warn("image: not running as root, file ownership in the image is lost");
		r->warned_owner = true;
	}
	/* chmod after chown: chown clears the set-id bits. */
	if (!link && fchmodat(pfd, name, archive_entry_perm(e), 0) < 0)
		return sbx_error_errno(err, errno, "chmod '%s'", name);
	return set_xattrs(pfd, name, e, err);
}

/* Keeps one mtime per directory, the last layer's: memory follows the
 * distinct directories, however often an archive repeats one. */
static int record_dir_time(struct sbx_rootfs *r, const char *path, struct archive_entry *e)
{
	if (r->dirs.count == r->cap_dir_mtimes) {
		size_t cap = r->cap_dir_mtimes ? r->cap_dir_mtimes * 2 : 64;
		struct timespec *t = realloc(r->dir_mtimes, cap * sizeof(*t));
		if (t == NULL)
			return -1;
		r->dir_mtimes = t;
		r->cap_dir_mtimes = cap;
	}
	size_t id;
	bool added;
	if (sbx_path_set_intern(&r->dirs, path, &id, &added) < 0)
		return -1;
	r->dir_mtimes[id] = (struct timespec){ .tv_sec = archive_entry_mtime(e), .tv_nsec = archive_entry_mtime_nsec(e) };
	return 0;
}

/* Charges entry e (see layer_apply.h), and checks the free space each
 * time the charge crosses SBX_SPACE_CHECK_BYTES more. */
static int charge(struct sbx_rootfs *r, struct archive_entry *e, const char *path, sbx_error_t *err)
{
	if (r->entries >= r->limits.max_entries)
		return sbx_error_set(err, 0, "'%s': the image has more than %llu entries (config key `image_max_entries`)",
				     path, (unsigned long long)r->limits.max_entries);
	r->entries++;
	uint64_t cost = SBX_ENTRY_COST + strlen(path);
	const char *link = archive_entry_symlink(e);
	if (link == NULL)
		link = archive_entry_hardlink(e);
	if (link != NULL)
		cost += strlen(link);
	const char *key;
	const void *value;
	size_t size;
	archive_entry_xattr_reset(e);
	while (archive_entry_xattr_next(e, &key, &value, &size) == ARCHIVE_OK)
		cost += strlen(key) + size;
	if (archive_entry_filetype(e) == AE_IFREG && archive_entry_hardlink(e) == NULL) {
		/* The declared size, not the data: a sparse entry of a huge size
		 * would otherwise become a huge file for mkfs.erofs to read. */
		int64_t declared = archive_entry_size(e);
		if (declared < 0)
			return sbx_error_set(err, 0, "'%s': bad size", path);
		cost += (uint64_t)declared;
	}
	if (cost > r->limits.max_bytes - r->bytes)
		return sbx_error_set(err, 0, "'%s': the image takes more than %llu MiB (config key `image_max_mb`)", path,
				     (unsigned long long)(r->limits.max_bytes >> 20));
	r->bytes += cost;
	if (r->bytes < r->next_space_check)
		return 0;
	r->next_space_check = r->bytes + SBX_SPACE_CHECK_BYTES;
	return sbx_store_space_check(r->root, r->dir, cost + SBX_SPACE_CHECK_BYTES, err);
}

static int apply_entry(struct sbx_rootfs *r, struct archive *a, struct archive_entry *e, char *path,
		       sbx_error_t *err)
{
	mode_t type = archive_entry_filetype(e);
	const char *hardlink = archive_entry_hardlink(e);
	if (path[0] == '\0') {
		/* The root itself: only its metadata. */
		if (type != AE_IFDIR)
			return sbx_error_set(err, 0, "layer replaces the root with a non-directory");
		int rfd = layer_resolve(r->root, "", O_PATH | O_DIRECTORY, err);
		if (rfd < 0)
			return -1;
		int rc = set_owner_mode(r, rfd, ".", e, false, err);
		close(rfd);
		return rc < 0 || record_dir_time(r, "", e) == 0 ? rc : sbx_error_errno(err, ENOMEM, "layer");
	}
	if (sbx_path_set_add(&r->layer_paths, path) < 0)
		return sbx_error_errno(err, ENOMEM, "layer");
	const char *name;
	cleanup_close int pfd = layer_open_parent(r, path, true, &name, err);
	if (pfd < 0)
		return -1;

	struct stat st;
	bool exists = fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (!(exists && type == AE_IFDIR && hardlink == NULL && S_ISDIR(st.st_mode)) && exists &&
	    layer_remove_tree(pfd, name, 0, err) < 0)
		return -1;

	struct timespec times[2] = { { .tv_nsec = UTIME_OMIT },
				     { .tv_sec = archive_entry_mtime(e), .tv_nsec = archive_entry_mtime_nsec(e) } };
	if (hardlink != NULL) {
		char target[SBX_TAR_PATH_MAX];
		if (sbx_tar_path_clean(hardlink, target, sizeof(target), err) < 0)
			return sbx_error_prefix(err, "hard link '%s'", path);
		const char *tname;
		cleanup_close int tfd = layer_open_parent(r, target, false, &tname, err);
		if (tfd < 0)
			return sbx_error_prefix(err, "hard link target");
		if (linkat(tfd, tname, pfd, name, 0) < 0)
			return sbx_error_errno(err, errno, "hard link '%s' -> '%s'", path, target);
		return 0;
	}
	switch (type) {
	case AE_IFDIR:
		if (!(exists && S_ISDIR(st.st_mode)) && mkdirat(pfd, name, 0700) < 0)
			return sbx_error_errno(err, errno, "mkdir '%s'", path);
		if (record_dir_time(r, path, e) < 0)
			return sbx_error_errno(err, ENOMEM, "layer");
		return set_owner_mode(r, pfd, name, e, false, err);
	case AE_IFREG: {
		int64_t size = archive_entry_size(e); /* checked by charge() */
		cleanup_close int fd = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return sbx_error_errno(err, errno, "create '%s'", path);
		if (write_data(a, fd, size, err) < 0)
			return sbx_error_prefix(err, "'%s'", path);
		break;
	}
	case AE_IFLNK: {
		const char *target = archive_entry_symlink(e);
		if (target == NULL || target[0] == '\0' || strlen(target) >= SBX_TAR_PATH_MAX)
			return sbx_error_set(err, 0, "symlink '%s' has a bad target", path);
		if (symlinkat(target, pfd, name) < 0)
			return sbx_error_errno(err, errno, "symlink '%s'", path);
		if (set_owner_mode(r, pfd, name, e, true, err) < 0)
			return -1;
		if (utimensat(pfd, name, times, AT_SYMLINK_NOFOLLOW) < 0)
			return sbx_error_errno(err, errno, "set mtime of '%s'", path);
		return 0;
	}
	case AE_IFCHR:
	case AE_IFBLK:
	case AE_IFIFO: {
		if (r->flags & SBX_ROOTFS_NO_SPECIAL)
			return sbx_error_set(err, 0, "'%s' is a device node or FIFO: refused (an archive holds only files, "
					     "directories and links)", path);
		dev_t dev = makedev(archive_entry_rdevmajor(e), archive_entry_rdevminor(e));
		if (mknodat(pfd, name, type | 0600, type == AE_IFIFO ? 0 : dev) < 0) {
			if (errno != EPERM)
				return sbx_error_errno(err, errno, "mknod '%s'", path);
			sbx_warn("image: cannot create device node '%s' without root; skipped", path);
			return 0;
		}
		break;
	}
	default:
		sbx_debug("image: skipping '%s' of type %o", path, (unsigned)type);
		return 0;
	}
	if (set_owner_mode(r, pfd, name, e, false, err) < 0)
		return -1;
	if (utimensat(pfd, name, times, AT_SYMLINK_NOFOLLOW) < 0)
		return sbx_error_errno(err, errno, "set mtime of '%s'", path);
	return 0;
}

struct sbx_rootfs *sbx_rootfs_open(const char *dir, const struct sbx_image_limits *limits, unsigned flags,
				   sbx_error_t *err)
{
	struct sbx_rootfs *r = calloc(1, sizeof(*r));
	if (r == NULL) {
		sbx_error_errno(err, ENOMEM, "rootfs");
		return NULL;
	}
	r->limits = *limits;
	r->flags = flags;
	r->dir = strdup(dir);
	if (r->dir == NULL) {
		sbx_error_errno(err, ENOMEM, "rootfs");
		free(r);
		return NULL;
	}
	r->root = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (r->root < 0) {
		sbx_error_errno(err, errno, "open staging directory '%s'", dir);
		free(r->dir);
		free(r);
		return NULL;
	}
	return r;
}

uint64_t sbx_rootfs_charged(const struct sbx_rootfs *r)
{
	return r->bytes;
}

int sbx_rootfs_apply_layer(struct sbx_rootfs *r, int fd, sbx_error_t *err)
{
	struct archive *a = archive_read_new();
	if (a == NULL)
		return sbx_error_errno(err, ENOMEM, "layer");
	archive_read_support_filter_gzip(a);
	archive_read_support_filter_zstd(a);
	archive_read_support_filter_none(a);
	archive_read_support_format_tar(a);
	archive_read_support_format_empty(a);
	int rc = 0;
	if (archive_read_open_fd(a, fd, 65536) != ARCHIVE_OK) {
		rc = sbx_error_set(err, 0, "layer: %s", archive_error_string(a));
		goto out;
	}
	struct archive_entry *e;
	for (;;) {
		int st = archive_read_next_header(a, &e);
		if (st == ARCHIVE_EOF)
			break;
		if (st != ARCHIVE_OK && st != ARCHIVE_WARN) {
			rc = sbx_error_set(err, 0, "layer: %s", archive_error_string(a));
			break;
		}
		const char *raw = archive_entry_pathname(e);
		char path[SBX_TAR_PATH_MAX];
		if (raw == NULL) {
			rc = sbx_error_set(err, 0, "layer: entry without a name");
			break;
		}
		if (sbx_tar_path_clean(raw, path, sizeof(path), err) < 0) {
			rc = sbx_error_prefix(err, "layer");
			break;
		}
		if ((rc = charge(r, e, path, err)) < 0)
			break;
		const char *base = strrchr(path, '/');
		base = base ? base + 1 : path;
		if (strncmp(base, WH_PREFIX, 4) == 0)
			rc = layer_apply_whiteout(r, path, err);
		else
			rc = apply_entry(r, a, e, path, err);
		if (rc < 0)
			break;
	}
out:
	archive_read_free(a);
	sbx_path_set_clear(&r->layer_paths);
	sbx_path_set_clear(&r->opaque_dirs);
	return rc;
}

int sbx_rootfs_finish(struct sbx_rootfs *r, sbx_error_t *err)
{
	/* Any order: setting a child's time does not touch its parent's. */
	for (size_t i = 0; i < r->dirs.cap; i++) {
		const struct sbx_path_slot *t = &r->dirs.slots[i];
		if (t->path == NULL)
			continue;
		int fd = layer_resolve(r->root, t->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, err);
		if (fd < 0) {
			if ((*err)->errnum != ENOENT && (*err)->errnum != ENOTDIR && (*err)->errnum != ELOOP)
				return -1;
			sbx_error_free(err); /* removed by a later layer */
			continue;
		}
		struct timespec times[2] = { { .tv_nsec = UTIME_OMIT }, r->dir_mtimes[t->id] };
		int rc = futimens(fd, times);
		close(fd);
		if (rc < 0)
			return sbx_error_errno(err, errno, "set mtime of '%s'", t->path);
	}
	return 0;
}

void sbx_rootfs_free(struct sbx_rootfs *r)
{
	if (r == NULL)
		return;
	sbx_path_set_clear(&r->dirs);
	free(r->dir_mtimes);
	sbx_path_set_clear(&r->layer_paths);
	sbx_path_set_clear(&r->opaque_dirs);
	close(r->root);
	free(r->dir);
	free(r);
}
