/* Paths of a layer's staging tree, each resolved as if the staging
 * directory were "/" (openat2 RESOLVE_IN_ROOT): what layer_apply.c and
 * layer_whiteout.c open. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "image/layer_internal.h"

int layer_resolve(int root, const char *path, int flags, sbx_error_t *err)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	int fd = (int)syscall(SYS_openat2, root, path[0] ? path : ".", &how, sizeof(how));
	if (fd < 0)
		return sbx_error_errno(err, errno, "open '%s'", path);
	return fd;
}

/* Creates the missing directories of path, each resolved from the root so
 * that symlinks keep their in-image meaning. */
static int create_parents(struct sbx_rootfs *r, char *path, sbx_error_t *err)
{
	int cur = layer_resolve(r->root, "", O_PATH | O_DIRECTORY, err);
	char *comp = path;
	while (cur >= 0) {
		char *next = strchr(comp, '/');
		if (next)
			*next = '\0';
		if (mkdirat(cur, comp, 0755) < 0 && errno != EEXIST) {
			sbx_error_errno(err, errno, "mkdir '%s'", path);
			close(cur);
			cur = -1;
		} else {
			close(cur);
			cur = layer_resolve(r->root, path, O_PATH | O_DIRECTORY, err);
		}
		if (next == NULL)
			break;
		*next = '/';
		comp = next + 1;
	}
	return cur;
}

/* Opens the parent directory of path (creating missing ones when create is
 * set, as Docker does for entries) and points *name at the last component. */
int layer_open_parent(struct sbx_rootfs *r, char *path, bool create, const char **name, sbx_error_t *err)
{
	char *slash = strrchr(path, '/');
	if (slash == NULL) {
		*name = path;
		return layer_resolve(r->root, "", O_PATH | O_DIRECTORY, err);
	}
	*name = slash + 1;
	*slash = '\0';
	int fd = layer_resolve(r->root, path, O_PATH | O_DIRECTORY, err);
	if (fd < 0 && create && (*err)->errnum == ENOENT) {
		sbx_error_free(err);
		fd = create_parents(r, path, err);
	}
	*slash = '/';
	return fd;
}
