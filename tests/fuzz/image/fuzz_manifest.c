#include <stdint.h>
#include <stdlib.h>

#include "image/oci_manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbx_manifest m;
	sbx_error_t err = NULL;
	if (sbx_manifest_decode((const char *)data, size, NULL, &m, &err) == 0) {
		if (m.kind == SBX_MANIFEST_INDEX)
			sbx_manifest_pick_platform(&m, "amd64", &err);
		sbx_manifest_free(&m);
	}
	sbx_error_free(&err);
	return 0;
}
