#include "worker/worker_roots.h"

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
