#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image/www_auth.h"

/* WWW-Authenticate values come from any registry (or a proxy in front of
 * one): every parse must stay within the fixed fields and terminate them. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = strndup((const char *)data, size);
	if (s == NULL)
		return 0;
	struct sbx_www_auth ch;
	sbx_error_t err = NULL;
	if (sbx_www_auth_parse(s, &ch, &err) == 0 &&
	    (strlen(ch.scheme) >= sizeof(ch.scheme) || strlen(ch.realm) >= sizeof(ch.realm) ||
	     strlen(ch.service) >= sizeof(ch.service) || strlen(ch.scope) >= sizeof(ch.scope)))
		abort();
	sbx_error_free(&err);
	free(s);
	return 0;
}
