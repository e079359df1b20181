/* Calling the adapter's front door from a test: the reply, or the parsed
 * envelope of an error (with "code"), or {"decode": message} when the
 * request did not decode. */
#ifndef SBX_TEST_ADAPTER_CALL_H
#define SBX_TEST_ADAPTER_CALL_H

#include <jansson.h>

#include "adapter/adapter.h"

/* `payload` is JSON text (any value; NUL escapes allowed). */
json_t *adapter_call_json(struct sbx_adapter *a, const char *op, const char *payload);
/* The same with the payload made by printf. */
json_t *adapter_callf(struct sbx_adapter *a, const char *op, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* j's string member k, NULL when absent or not a string. */
const char *jstr(json_t *j, const char *k);

#endif
