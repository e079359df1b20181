#include "common/state_dir.h"

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/path.h"

int sbx_mkdir_p(const char *path, mode_t mode, sbx_error_t *err)
{
	if (path[0] == '\0')
		return sbx_error_set(err, EINVAL, "empty directory path");
	cleanup_free char *p = strdup(path);
	if (p == NULL)
		return sbx_error_errno(err, ENOMEM, "mkdir %s", path);
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char saved = *s;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST)
			return sbx_error_errno(err, errno, "mkdir %s", p);
		*s = saved;
		if (saved == '\0')
			break;
	}
	struct stat st;
	if (stat(path, &st) < 0)
		return sbx_error_errno(err, errno, "stat %s", path);
	if (!S_ISDIR(st.st_mode))
		return sbx_error_set(err, ENOTDIR, "%s is not a directory", path);
	return 0;
}

static char *join(const char *a, const char *b, sbx_error_t *err)
{
	char *s = sbx_path_join(a, b);
	if (s == NULL) {
		sbx_error_errno(err, ENOMEM, "state directory path");
		return NULL;
	}
	return s;
}

static char *dup_prefix(const char *v, size_t n, sbx_error_t *err)
{
	char *s = strndup(v, n);
	if (s == NULL)
		sbx_error_errno(err, ENOMEM, "state directory path");
	return s;
}

static char *home_state_dir(sbx_error_t *err)
{
	const char *v = getenv("XDG_STATE_HOME");
	if (v != NULL && v[0] == '/')
		return join(v, "sandbox-libkrun", err);
	const char *home = getenv("HOME");
	if (home == NULL || home[0] != '/') {
		struct passwd *pw = getpwuid(getuid());
		home = pw != NULL ? pw->pw_dir : NULL;
	}
	if (home == NULL || home[0] != '/') {
		sbx_error_set(err, 0, "no state directory: set III_SANDBOX_STATE_DIR or HOME");
		return NULL;
	}
	return join(home, ".local/state/sandbox-libkrun", err);
}

/* $STATE_DIRECTORY (systemd's StateDirectory=) may list several; the first
 * is ours.  Root is the host's daemon or its operator: its images and
 * templates are the host's, shared by `serve`, `run` and `image`, not one
 * login's. */
static char *pick_state_dir(sbx_error_t *err)
{
	const char *v = getenv("III_SANDBOX_STATE_DIR");
	if (v != NULL && v[0] != '\0')
		return dup_prefix(v, strlen(v), err);
	if ((v = getenv("STATE_DIRECTORY")) != NULL && v[0] == '/')
		return dup_prefix(v, strcspn(v, ":"), err);
	if (geteuid() == 0)
		return dup_prefix(SBX_SYSTEM_STATE_DIR, strlen(SBX_SYSTEM_STATE_DIR), err);
	return home_state_dir(err);
}

char *sbx_state_dir(sbx_error_t *err)
{
	cleanup_free char *dir = pick_state_dir(err);
	if (dir == NULL)
		return NULL;
	if (strlen(dir) > PATH_MAX / 2) {
		sbx_error_set(err, ENAMETOOLONG, "state directory path is too long");
		return NULL;
	}
	if (sbx_mkdir_p(dir, 0700, err) < 0) {
		sbx_error_prefix(err, "state directory");
		return NULL;
	}
	return sbx_steal_ptr(dir);
}

char *sbx_state_subdir(const char *sub, sbx_error_t *err)
{
	cleanup_free char *base = sbx_state_dir(err);
	if (base == NULL)
		return NULL;
	cleanup_free char *dir = join(base, sub, err);
	if (dir == NULL)
		return NULL;
	if (sbx_mkdir_p(dir, 0700, err) < 0)
		return NULL;
	return sbx_steal_ptr(dir);
}
