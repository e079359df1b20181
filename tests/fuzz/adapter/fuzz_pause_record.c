/* Arbitrary bytes as a paused sandbox's record (pause/pause_record.h): a
 * later daemon reads it from disk; read, then load its processes the way
 * the adoption does (process/process_saved.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapter/pause/pause_record.h"
#include "adapter/process/process_saved.h"
#include "common/log.h"

static char dir[] = "/tmp/sbx-fuzz-record-XXXXXX";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	sbx_log_set_level(SBX_LOG_ERROR);
	static bool made;
	if (!made && mkdtemp(dir) == NULL)
		abort();
	made = true;
	char path[sizeof(dir) + 32];
	snprintf(path, sizeof(path), "%s/sandbox.json", dir);
	FILE *f = fopen(path, "w");
	if (f == NULL || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
	struct pause_record r;
	sbx_error_t err = NULL;
	int rc = pause_record_read(dir, 1u << 20, &r, &err);
	if ((rc < 0) != (err != NULL))
		abort();
	sbx_error_free(&err);
	if (rc != 0)
		return 0;
	if (r.sb.image == NULL || r.sb.cpus == 0 || r.procs == NULL || r.backend == NULL)
		abort();
	size_t i;
	json_t *rec;
	json_array_foreach(r.procs, i, rec) {
		struct bg_proc *p = bg_proc_from_saved(rec, 4096, NULL, &err);
		if ((p == NULL) != (err != NULL))
			abort();
		sbx_error_free(&err);
		bg_proc_unref(p);
	}
	pause_record_free(&r);
	return 0;
}
