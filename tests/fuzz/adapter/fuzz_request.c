/* Arbitrary JSON text into every function's decoder and validators (the
 * 23 and the extensions), with a registry holding one sandbox so the checks
 * past the lookup run too.  The first byte picks the function.  Decoded like the engine client does, so
 * strings may hold NUL bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/adapter.h"

static struct sbx_adapter *adapter;

static void setup(void)
{
	sbx_error_t err = NULL;
	json_t *v = json_loads("{\"image_allowlist\":[\"python\"],\"per_image_caps\":{\"python\":{\"max_cpus\":2,"
			       "\"max_memory_mb\":1024}}}",
			       0, NULL);
	setenv("III_SANDBOX_WORKER_TOKEN", "fuzz-token", 1);
	adapter = sbx_adapter_new(sbx_config_parse(v, &err), &err);
	json_decref(v);
	if (adapter == NULL || sbx_registry_insert(adapter->reg, "0f8fad5b-d9cb-469f-a165-70867728950e", NULL,
						   "python", 300, &err) < 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (adapter == NULL)
		setup();
	if (size < 1)
		return 0;
	size_t n, n_ext;
	const struct sbx_op *ops = sbx_ops(&n);
	const struct sbx_op *ext = sbx_op_extensions(&n_ext);
	size_t pick = data[0] % (n + n_ext);
	const struct sbx_op *op = pick < n ? &ops[pick] : &ext[pick - n];
	json_t *req = json_loadb((const char *)data + 1, size - 1, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	json_t *out = NULL;
	int rc = sbx_adapter_call(adapter, op->op, req, &out);
	/* Every call answers: a result, or an error body with code and message. */
	if (out == NULL || (rc < 0 && (!json_is_string(json_object_get(out, "code")) ||
				       !json_is_string(json_object_get(out, "message")))))
		abort();
	json_decref(out);
	json_decref(req);
	return 0;
}
