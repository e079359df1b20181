#include "adapter_call.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *adapter_call_json(struct sbx_adapter *a, const char *op, const char *payload)
{
	json_t *req = json_loads(payload, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	json_t *out = NULL;
	int rc = sbx_adapter_call(a, op, req, &out);
	json_decref(req);
	if (rc == 0)
		return out;
	/* The engine-facing error carries the envelope as its message. */
	const char *m = json_string_value(json_object_get(out, "message"));
	json_t *env = m != NULL && strncmp(m, "handler error: ", 15) == 0 ? json_loads(m + 15, 0, NULL)
									     : json_pack("{s:s}", "decode", m ? m : "");
	json_decref(out);
	return env;
}

json_t *adapter_callf(struct sbx_adapter *a, const char *op, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *payload = NULL;
	int n = vasprintf(&payload, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	json_t *r = adapter_call_json(a, op, payload);
	free(payload);
	return r;
}

const char *jstr(json_t *j, const char *k)
{
	return json_string_value(json_object_get(j, k));
}
