/* Scope-bound release of jansson values (host side only: the guest has no
 * jansson). */
#ifndef SBX_COMMON_CLEANUP_JSON_H
#define SBX_COMMON_CLEANUP_JSON_H

#include <jansson.h>

static inline void sbx_json_decrefp(json_t **j)
{
	json_decref(*j); /* NULL is a no-op */
}
#define cleanup_json __attribute__((cleanup(sbx_json_decrefp)))

#endif
