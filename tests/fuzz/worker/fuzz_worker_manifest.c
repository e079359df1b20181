/* Arbitrary bytes as iii.worker.yaml (the first byte picks the bundle
 * rules), and as any YAML through the converter `serve --config` uses. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/strv.h"
#include "worker/worker_manifest.h"
#include "common/yaml_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	sbx_log_set_level(SBX_LOG_ERROR);
	if (size < 1)
		return 0;
	bool bundle = data[0] & 1;
	const char *text = (const char *)data + 1;
	size_t len = size - 1;
	sbx_error_t err = NULL;
	struct worker_manifest m;
	if (worker_manifest_parse(text, len, bundle, &m, &err) == 0) {
		/* An accepted manifest keeps the promises prepare relies on. */
		if (err != NULL || m.env == NULL || (bundle && (m.setup || m.install || m.base_image)) ||
		    m.resources.cpus > WORKER_MAX_CPUS || m.resources.memory_mb > WORKER_MAX_MEMORY_MB)
			abort();
		for (size_t i = 0; m.env[i] != NULL; i++) {
			if (strchr(m.env[i], '=') == NULL)
				abort();
		}
		worker_manifest_free(&m);
	} else if (err == NULL || strncmp(sbx_error_msg(err), WORKER_MANIFEST_FILE ": ", 17) != 0) {
		abort();
	}
	sbx_error_free(&err);
	json_t *j = yaml_to_json(text, len, NULL, &err);
	if ((j == NULL) == (err == NULL))
		abort();
	json_decref(j);
	sbx_error_free(&err);
	return 0;
}
