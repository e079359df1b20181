#include "common/tool_path.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/path.h"

const char *const sbx_tool_sbin_dirs[] = { "/usr/local/sbin", "/usr/sbin", "/sbin", NULL };

#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

static const struct {
	const char *tool;
	const char *package;
} packages[] = {
	{ "mkfs.ext4", "e2fsprogs" },
	{ "mkfs.erofs", "erofs-utils" },
	{ "qemu-system-x86_64", "qemu-system-x86" },
	{ "rm", "coreutils" },
};

static const char *package_of(const char *name)
{
	for (size_t i = 0; i < sizeof(packages) / sizeof(packages[0]); i++)
		if (strcmp(packages[i].tool, name) == 0)
			return packages[i].package;
	return NULL;
}

/* `dir`/`name` when it is executable, else NULL (errno ENOMEM when out of
 * memory). */
static char *try_dir(const char *dir, const char *name)
{
	if (dir[0] != '/')
		return NULL;
	char *p = sbx_path_join(dir, name);
	if (p == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if (access(p, X_OK) == 0)
		return p;
	free(p);
	errno = 0;
	return NULL;
}

char *sbx_tool_find_in(const char *name, const char *path, const char *const sbin[], sbx_error_t *err)
{
	if (path == NULL)
		path = DEFAULT_PATH;
	cleanup_free char *copy = strdup(path);
	if (copy == NULL) {
		sbx_error_errno(err, ENOMEM, "find %s", name);
		return NULL;
	}
	char *save = NULL;
	for (char *d = strtok_r(copy, ":", &save); d != NULL; d = strtok_r(NULL, ":", &save)) {
		char *p = try_dir(d, name);
		if (p != NULL || errno == ENOMEM) {
			if (p == NULL)
				sbx_error_errno(err, ENOMEM, "find %s", name);
			return p;
		}
	}
	size_t nsbin = 0;
	for (; sbin[nsbin] != NULL; nsbin++) {
		char *p = try_dir(sbin[nsbin], name);
		if (p != NULL || errno == ENOMEM) {
			if (p == NULL)
				sbx_error_errno(err, ENOMEM, "find %s", name);
			return p;
		}
	}
	/* The error: "<name> not found in PATH (<path>) or <sbin...>; install <package>". */
	char where[1024] = "";
	size_t len = 0;
	for (size_t i = 0; i < nsbin; i++) {
		int n = snprintf(where + len, sizeof(where) - len, "%s%s", i > 0 ? ":" : "", sbin[i]);
		if (n < 0 || (size_t)n >= sizeof(where) - len) {
			snprintf(where + len, sizeof(where) - len, "...");
			break;
		}
		len += (size_t)n;
	}
	const char *pkg = package_of(name);
	sbx_error_set(err, ENOENT, "%s not found in PATH (%s) or %s%s%s", name, path, where,
		      pkg != NULL ? "; install " : "", pkg != NULL ? pkg : "");
	return NULL;
}

char *sbx_tool_find(const char *name, sbx_error_t *err)
{
	return sbx_tool_find_in(name, getenv("PATH"), sbx_tool_sbin_dirs, err);
}
