#include "image/tar_path.h"

#include <string.h>

int sbx_tar_path_clean(const char *in, char *out, size_t cap, sbx_error_t *err)
{
	size_t len = strlen(in);
	if (len >= SBX_TAR_PATH_MAX || cap == 0)
		return sbx_error_set(err, 0, "entry name too long (%zu bytes)", len);
	size_t o = 0, depth = 0;
	const char *p = in;
	while (*p) {
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return sbx_error_set(err, 0, "entry name '%s' contains '..'", in);
		if (n > 255)
			return sbx_error_set(err, 0, "entry name has a component longer than 255 bytes");
		if (n > 0 && !(n == 1 && p[0] == '.')) {
			if (++depth > SBX_TAR_DEPTH_MAX)
				return sbx_error_set(err, 0, "entry name nested deeper than %d", SBX_TAR_DEPTH_MAX);
			if (o + (o ? 1 : 0) + n >= cap)
				return sbx_error_set(err, 0, "entry name too long");
			if (o)
				out[o++] = '/';
			memcpy(out + o, p, n);
			o += n;
		}
		p += n;
		while (*p == '/')
			p++;
	}
	out[o] = '\0';
	return 0;
}
