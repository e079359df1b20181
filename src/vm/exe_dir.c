#include "vm/exe_dir.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/path.h"

#define LEVELS 4

char *vm_find_beside_exe(const char *const *names, int mode)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	for (int up = 0; up < LEVELS; up++) {
		char *slash = strrchr(exe, '/');
		if (slash == NULL)
			return NULL;
		*slash = '\0';
		for (const char *const *name = names; *name != NULL; name++) {
			char *cand = sbx_path_join(exe[0] != '\0' ? exe : "/", *name);
			if (cand != NULL && access(cand, mode) == 0)
				return cand;
			free(cand);
		}
	}
	return NULL;
}
