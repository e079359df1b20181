/* Whiteouts and opaque directories of a layer: what lower layers put
 * there is removed, this layer's own entries kept. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "image/layer_internal.h"
#include "image/path_set.h"
#include "image/tar_path.h"

int layer_remove_tree(int parent, const char *name, int depth, sbx_error_t *err)
{
	struct stat st;
	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : sbx_error_errno(err, errno, "stat '%s'", name);
	if (!S_ISDIR(st.st_mode)) {
		if (unlinkat(parent, name, 0) < 0 && errno != ENOENT)
			return sbx_error_errno(err, errno, "unlink '%s'", name);
		return 0;
	}
	if (depth > SBX_TAR_DEPTH_MAX)
		return sbx_error_set(err, 0, "directory tree too deep to remove");
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return sbx_error_errno(err, errno, "open '%s'", name);
	cleanup_dir DIR *d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return sbx_error_errno(err, errno, "opendir '%s'", name);
	}
	struct dirent *de;
	while ((errno = 0, de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (layer_remove_tree(dirfd(d), de->d_name, depth + 1, err) < 0)
			return -1;
	}
	if (errno != 0)
		return sbx_error_errno(err, errno, "readdir '%s'", name);
	if (unlinkat(parent, name, AT_REMOVEDIR) < 0)
		return sbx_error_errno(err, errno, "rmdir '%s'", name);
	return 0;
}

/* Removes what lower layers put in dir, keeping this layer's own entries. */
static int make_opaque(struct sbx_rootfs *r, const char *dir, sbx_error_t *err)
{
	int pfd = layer_resolve(r->root, dir, O_RDONLY | O_DIRECTORY, err);
	if (pfd < 0)
		return -1;
	cleanup_dir DIR *d = fdopendir(pfd);
	if (d == NULL) {
		close(pfd);
		return sbx_error_errno(err, errno, "opendir '%s'", dir);
	}
	struct dirent *de;
	char child[SBX_TAR_PATH_MAX + 256];
	while ((errno = 0, de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		int n = snprintf(child, sizeof(child), "%s%s%s", dir, dir[0] ? "/" : "", de->d_name);
		if (n < 0 || (size_t)n >= sizeof(child))
			return sbx_error_set(err, 0, "path too long under '%s'", dir);
		if (sbx_path_set_has(&r->layer_paths, child))
			continue;
		if (layer_remove_tree(dirfd(d), de->d_name, 0, err) < 0)
			return -1;
	}
	if (errno != 0)
		return sbx_error_errno(err, errno, "readdir '%s'", dir);
	return 0;
}

int layer_apply_whiteout(struct sbx_rootfs *r, char *path, sbx_error_t *err)
{
	char *slash = strrchr(path, '/');
	char *base = slash ? slash + 1 : path;
	char dir[SBX_TAR_PATH_MAX];
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 0, path);
	if (strcmp(base, WH_OPAQUE) == 0) {
		/* Once per directory per layer: a repeated marker finds only this
		 * layer's own entries, which it spares. */
		size_t id;
		bool added;
		if (sbx_path_set_intern(&r->opaque_dirs, dir, &id, &added) < 0)
			return sbx_error_errno(err, ENOMEM, "layer");
		return added ? make_opaque(r, dir, err) : 0;
	}
	if (strncmp(base, WH_PREFIX WH_PREFIX, 8) == 0)
		return 0; /* other AUFS metadata (.wh..wh.plnk, ...) has no meaning here */
	/* ".wh.name" removes name: drop the prefix in place. */
	memmove(base, base + 4, strlen(base + 4) + 1);
	if (base[0] == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return sbx_error_set(err, 0, "bad whiteout entry");
	if (sbx_path_set_has(&r->layer_paths, path))
		return 0;
	const char *name;
	int pfd = layer_open_parent(r, path, false, &name, err);
	if (pfd < 0) {
		/* Whiting out something below a missing directory is a no-op. */
		if ((*err)->errnum == ENOENT || (*err)->errnum == ENOTDIR) {
			sbx_error_free(err);
			return 0;
		}
		return -1;
	}
	int rc = layer_remove_tree(pfd, name, 0, err);
	close(pfd);
	return rc;
}
