/* Arbitrary bytes as a snapshot's record (snapshot/snapshot_store.h):
 * snapshot::list and create with `snapshot` read it from disk, where a
 * copied or damaged snapshot may have put anything. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/snapshot/snapshot_store.h"
#include "common/log.h"

static char dir[] = "/tmp/sbx-fuzz-snapshot-XXXXXX";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	sbx_log_set_level(SBX_LOG_ERROR);
	static bool made;
	if (!made && mkdtemp(dir) == NULL)
		abort();
	made = true;
	char path[sizeof(dir) + 32];
	snprintf(path, sizeof(path), "%s/snapshot.json", dir);
	FILE *f = fopen(path, "w");
	if (f == NULL || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
	struct snapshot_meta m;
	sbx_error_t err = NULL;
	int rc = snapshot_meta_read(dir, &m, &err);
	if ((rc < 0) != (err != NULL))
		abort();
	sbx_error_free(&err);
	if (rc != 0)
		return 0;
	/* What list and create rely on. */
	if (m.image == NULL || m.cpus == 0 || m.memory_mb == 0 || strlen(m.id) != SBX_UUID_STRLEN ||
	    strlen(m.source) != SBX_UUID_STRLEN)
		abort();
	snapshot_meta_free(&m);
	return 0;
}
