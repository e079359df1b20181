#include "common/strv.h"

#include <stdlib.h>
#include <string.h>

size_t sbx_strv_len(char *const *v)
{
	size_t n = 0;
	while (v != NULL && v[n] != NULL)
		n++;
	return n;
}

char **sbx_strv_dup(char *const *v)
{
	size_t n = sbx_strv_len(v);
	char **out = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; out != NULL && i < n; i++) {
		if ((out[i] = strdup(v[i])) == NULL) {
			sbx_strv_free(out);
			return NULL;
		}
	}
	return out;
}

void sbx_strv_free(char **v)
{
	if (v == NULL)
		return;
	for (char **p = v; *p != NULL; p++)
		free(*p);
	free(v);
}
