#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image/tar_path.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = strndup((const char *)data, size);
	if (s == NULL)
		return 0;
	char out[SBX_TAR_PATH_MAX];
	sbx_error_t err = NULL;
	if (sbx_tar_path_clean(s, out, sizeof(out), &err) == 0) {
		/* the result is relative, has no "..", "." or empty component */
		if (out[0] == '/' || strstr(out, "//") != NULL || (out[0] != '\0' && out[strlen(out) - 1] == '/'))
			abort();
		for (char *p = out; *p;) {
			size_t n = strcspn(p, "/");
			if ((n == 2 && p[0] == '.' && p[1] == '.') || (n == 1 && p[0] == '.'))
				abort();
			p += n + (p[n] == '/');
		}
	}
	sbx_error_free(&err);
	free(s);
	return 0;
}
