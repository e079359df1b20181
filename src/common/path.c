#include "common/path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *sbx_path_join(const char *dir, const char *name)
{
	char *s = NULL;
	return asprintf(&s, "%s/%s", dir, name) < 0 ? NULL : s;
}

char *sbx_path_last(const char *path)
{
	size_t end = strlen(path);
	while (end > 0 && path[end - 1] == '/')
		end--;
	size_t start = end;
	while (start > 0 && path[start - 1] != '/')
		start--;
	return strndup(path + start, end - start);
}
