#include "vm/exe_dir.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/path.h"

#define LEVELS 4
#define PART_DIR "sandbox-libkrun"

char *vm_installed_part(const char *exe, const char *bindir, const char *libexecdir, const char *name)
{
	char *out = NULL;
	if (libexecdir[0] == '/')
		return asprintf(&out, "%s/" PART_DIR "/%s", libexecdir, name) < 0 ? NULL : out;
	const char *slash = strrchr(exe, '/');
	size_t dir_len = slash != NULL ? (size_t)(slash - exe) : 0;
	size_t bin_len = strlen(bindir);
	/* exe is <prefix>/<bindir>/<file>: bindir must be whole components. */
	if (bin_len == 0 || dir_len < bin_len + 1 || exe[dir_len - bin_len - 1] != '/' ||
	    strncmp(exe + dir_len - bin_len, bindir, bin_len) != 0)
		return NULL;
	int prefix_len = (int)(dir_len - bin_len - 1);
	return asprintf(&out, "%.*s/%s/" PART_DIR "/%s", prefix_len, exe, libexecdir, name) < 0 ? NULL : out;
}

static char *find_in_build_tree(char *dir, const char *const *names, int mode)
{
	for (int up = 0; up < LEVELS; up++) {
		char *slash = strrchr(dir, '/');
		if (slash == NULL)
			return NULL;
		*slash = '\0';
		for (const char *const *name = names; *name != NULL; name++) {
			char *cand = sbx_path_join(dir[0] != '\0' ? dir : "/", *name);
			if (cand != NULL && access(cand, mode) == 0)
				return cand;
			free(cand);
		}
	}
	return NULL;
}

char *vm_find_part(const char *name, const char *const *build_names, int mode)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	char *installed = vm_installed_part(exe, SBX_BINDIR, SBX_LIBEXECDIR, name);
	if (installed != NULL && access(installed, mode) == 0)
		return installed;
	free(installed);
	return find_in_build_tree(exe, build_names, mode);
}
