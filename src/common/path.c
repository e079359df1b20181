#include "common/path.h"

#include <stdio.h>
#include <stdlib.h>

char *sbx_path_join(const char *dir, const char *name)
{
	char *s = NULL;
	return asprintf(&s, "%s/%s", dir, name) < 0 ? NULL : s;
}
