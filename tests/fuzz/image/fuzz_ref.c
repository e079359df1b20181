#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image/image_ref.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = strndup((const char *)data, size);
	if (s == NULL)
		return 0;
	struct sbx_image_ref ref;
	sbx_error_t err = NULL;
	char out[2 * SBX_REF_NAME_MAX + 2];
	if (sbx_image_ref_parse(s, &ref, &err) == 0) {
		/* a parsed reference formats and re-parses to itself */
		if (sbx_image_ref_format(&ref, out, sizeof(out)) == 0) {
			struct sbx_image_ref again;
			/* fields compared as strings: bytes after their NUL are not part of them */
			if (sbx_image_ref_parse(out, &again, &err) < 0 || strcmp(ref.domain, again.domain) != 0 ||
			    strcmp(ref.path, again.path) != 0 || strcmp(ref.tag, again.tag) != 0 ||
			    strcmp(ref.digest, again.digest) != 0)
				abort();
		}
	}
	sbx_error_free(&err);
	free(s);
	return 0;
}
