/* Parsing of a WWW-Authenticate challenge (RFC 7235), as registries send
 * it: Bearer realm="...",service="...",scope="..." or Basic realm="...". */
#ifndef SBX_IMAGE_WWW_AUTH_H
#define SBX_IMAGE_WWW_AUTH_H

#include "common/error.h"

struct sbx_www_auth {
	char scheme[16]; /* "bearer" or "basic", lower-cased */
	char realm[1024];
	char service[256];
	char scope[512];
};

int sbx_www_auth_parse(const char *header, struct sbx_www_auth *out, sbx_error_t *err);

#endif
