#include "worker/worker_roots.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/scodes.h"

bool worker_path_within(const char *path, const char *root)
{
	size_t n = strlen(root);
	if (n == 1 && root[0] == '/')
		return path[0] == '/';
	return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

char *worker_package_cache(sbx_error_t *err)
{
	char *out = NULL;
	const char *state = getenv("III_COMPOSE_STATE_DIR");
	if (state != NULL && state[0] != '\0') {
		if (asprintf(&out, "%s/packages", state) < 0)
			out = NULL;
	} else {
		const char *home = getenv("HOME");
		if (home == NULL || home[0] != '/') {
			struct passwd *pw = getpwuid(getuid());
			home = pw != NULL ? pw->pw_dir : "/nonexistent";
		}
		if (asprintf(&out, "%s/.iii/compose/packages", home) < 0)
			out = NULL;
	}
	if (out == NULL)
		sbx_error_errno(err, ENOMEM, "package cache path");
	return out;
}

/* A root resolved, or NULL when it does not exist (then it holds nothing). */
static char *resolve_root(const char *root)
{
	return root != NULL && root[0] == '/' ? realpath(root, NULL) : NULL;
}

static int outside(const char *host_path, const char *why, const char *project, const char *cache,
		   sbx_error_t *err)
{
	char project_desc[PATH_MAX + 64];
	if (project == NULL || project[0] == '\0')
		snprintf(project_desc, sizeof(project_desc), "(unset: III_COMPOSE_PROJECT_DIR)");
	else
		snprintf(project_desc, sizeof(project_desc), "'%s'", project);
	return sbx_error_scode(err, SBX_S_HOST_PATH,
			       "host_path '%s'%s is outside the Compose project directory %s and the package cache '%s'",
			       host_path, why, project_desc, cache);
}

int worker_roots_check(const char *host_path, char **canonical, bool *in_package_cache, sbx_error_t *err)
{
	*canonical = NULL;
	const char *project = getenv("III_COMPOSE_PROJECT_DIR");
	cleanup_free char *cache = worker_package_cache(err);
	if (cache == NULL)
		return -1;
	if (host_path[0] != '/')
		return outside(host_path, " (not an absolute path)", project, cache, err);
	cleanup_free char *real = realpath(host_path, NULL);
	if (real == NULL) {
		char why[128];
		snprintf(why, sizeof(why), " (%s)", strerror(errno));
		return outside(host_path, why, project, cache, err);
	}
	cleanup_free char *real_cache = resolve_root(cache);
	cleanup_free char *real_project = resolve_root(project);
	bool in_cache = real_cache != NULL && worker_path_within(real, real_cache);
	if (!in_cache && (real_project == NULL || !worker_path_within(real, real_project))) {
		char why[PATH_MAX + 32] = "";
		if (strcmp(real, host_path) != 0)
			snprintf(why, sizeof(why), " (resolved: '%s')", real);
		return outside(host_path, why, project, cache, err);
	}
	*in_package_cache = in_cache;
	*canonical = sbx_steal_ptr(real);
	return 0;
}

/* The descriptor's own path now (readlink of /proc/self/fd/N), malloc'd. */
static char *fd_path(int fd, sbx_error_t *err)
{
	char link[64], buf[PATH_MAX];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, buf, sizeof(buf));
	if (n < 0 || (size_t)n >= sizeof(buf))
		return sbx_error_errno(err, n < 0 ? errno : ENAMETOOLONG, "readlink %s", link), NULL;
	char *out = strndup(buf, (size_t)n);
	if (out == NULL)
		sbx_error_errno(err, ENOMEM, "host_path");
	return out;
}

int worker_roots_open(const char *host_path, char **canonical, bool *in_package_cache, int *fd, sbx_error_t *err)
{
	*fd = -1;
	cleanup_free char *real = NULL;
	if (worker_roots_check(host_path, &real, in_package_cache, err) < 0)
		return -1;
	/* real has no symlink: one met now was swapped in since. */
	struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS };
	cleanup_close int dfd = (int)syscall(SYS_openat2, AT_FDCWD, real, &how, sizeof(how));
	if (dfd < 0 && errno == ELOOP)
		return sbx_error_scode(err, SBX_S_HOST_PATH, "host_path '%s' changed while it was checked (a symlink in '%s')",
				       host_path, real);
	struct stat st;
	int e = dfd < 0 || fstat(dfd, &st) < 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
	if (e != 0) {
		sbx_error_errno(err, e, "host_path %s", host_path);
		sbx_error_default_scode(err, SBX_S_INVALID_REQUEST);
		return -1;
	}
	/* A parent renamed during the walk shows as another path. */
	cleanup_free char *now = fd_path(dfd, err);
	if (now == NULL)
		return -1;
	if (strcmp(now, real) != 0)
		return sbx_error_scode(err, SBX_S_HOST_PATH, "host_path '%s' changed while it was checked (now '%s')",
				       host_path, now);
	*canonical = sbx_steal_ptr(real);
	*fd = sbx_steal_fd(dfd);
	return 0;
}
