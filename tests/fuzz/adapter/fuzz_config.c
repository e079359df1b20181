/* Arbitrary JSON text as the configuration value: parse, then use what was
 * parsed the way the adapter does. */
#include <stdint.h>
#include <stdlib.h>

#include "adapter/config/config.h"
#include "adapter/sandbox/catalog.h"
#include "common/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	sbx_log_set_level(SBX_LOG_ERROR);
	json_t *v = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	sbx_error_t err = NULL;
	struct sbx_config *cfg = sbx_config_parse(v, &err);
	if (cfg == NULL && err == NULL)
		abort();
	if (cfg != NULL) {
		if (cfg->max_concurrent_exec_per_sandbox == 0)
			abort();
		json_t *list = sbx_catalog_list(cfg);
		json_decref(list);
		sbx_catalog_resolve(cfg, "python", &err);
	}
	sbx_error_free(&err);
	sbx_config_free(cfg);
	json_decref(v);
	return 0;
}
