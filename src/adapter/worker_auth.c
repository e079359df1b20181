#include "adapter/worker_auth.h"

#include "common/scodes.h"

#include <stdbool.h>
#include <string.h>

/* Equal strings in time that depends only on the lengths. */
static bool equal_const_time(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t n = la > lb ? la : lb;
	unsigned char diff = la != lb;
	for (size_t i = 0; i < n; i++) {
		unsigned char x = i < la ? (unsigned char)a[i] : 0;
		unsigned char y = i < lb ? (unsigned char)b[i] : 0;
		diff |= x ^ y;
	}
	return diff == 0;
}

int worker_auth_check(const char *token, json_t *req, sbx_error_t *err)
{
	json_t *v = json_object_get(req, "auth");
	const char *auth = json_string_value(v);
	/* "<token>\0<anything>" must not pass as the token. */
	if (token == NULL || token[0] == '\0' || auth == NULL || strlen(auth) != json_string_length(v) ||
	    !equal_const_time(auth, token))
		return sbx_error_scode(err, SBX_S_AUTH,
				       "worker auth failed: `auth` is missing or does not match the adapter's worker "
				       "token (III_SANDBOX_WORKER_TOKEN)");
	return 0;
}
