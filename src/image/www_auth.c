#include "image/www_auth.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

static const char *skip_space(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

int sbx_www_auth_parse(const char *h, struct sbx_www_auth *out, sbx_error_t *err)
{
	memset(out, 0, sizeof(*out));
	const char *p = skip_space(h);
	size_t n = 0;
	while (isalpha((unsigned char)p[n]))
		n++;
	if (n == 0 || n >= sizeof(out->scheme))
		return sbx_error_set(err, 0, "WWW-Authenticate: no scheme");
	for (size_t i = 0; i < n; i++)
		out->scheme[i] = (char)tolower((unsigned char)p[i]);
	p = skip_space(p + n);
	while (*p) {
		size_t klen = 0;
		while (p[klen] && p[klen] != '=' && p[klen] != ',' && p[klen] != ' ')
			klen++;
		if (p[klen] != '=')
			return sbx_error_set(err, 0, "WWW-Authenticate: malformed parameter");
		char *dst = NULL;
		size_t cap = 0;
		if (klen == 5 && strncasecmp(p, "realm", 5) == 0) {
			dst = out->realm;
			cap = sizeof(out->realm);
		} else if (klen == 7 && strncasecmp(p, "service", 7) == 0) {
			dst = out->service;
			cap = sizeof(out->service);
		} else if (klen == 5 && strncasecmp(p, "scope", 5) == 0) {
			dst = out->scope;
			cap = sizeof(out->scope);
		}
		p += klen + 1;
		size_t o = 0;
		if (*p == '"') {
			p++;
			while (*p && *p != '"') {
				if (*p == '\\' && p[1])
					p++;
				if (dst != NULL) {
					if (o + 1 >= cap)
						return sbx_error_set(err, 0, "WWW-Authenticate: parameter too long");
					dst[o++] = *p;
				}
				p++;
			}
			if (*p != '"')
				return sbx_error_set(err, 0, "WWW-Authenticate: unterminated quoted string");
			p++;
		} else {
			while (*p && *p != ',' && *p != ' ' && *p != '\t') {
				if (dst != NULL) {
					if (o + 1 >= cap)
						return sbx_error_set(err, 0, "WWW-Authenticate: parameter too long");
					dst[o++] = *p;
				}
				p++;
			}
		}
		if (dst != NULL)
			dst[o] = '\0';
		p = skip_space(p);
		if (*p == ',')
			p = skip_space(p + 1);
		else if (*p != '\0')
			return sbx_error_set(err, 0, "WWW-Authenticate: expected ','");
	}
	return 0;
}
