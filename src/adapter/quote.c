#include "adapter/quote.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends `s` quoted to the memstream. */
static void put_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				fprintf(f, "\\u{%x}", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

/* The memstream's buffer is only final after fclose(). */
static char *finish(FILE *f, char **buf)
{
	bool failed = ferror(f) != 0;
	if (fclose(f) != 0 || failed) {
		free(*buf);
		return NULL;
	}
	return *buf;
}

char *sbx_quote(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (f == NULL)
		return NULL;
	put_quoted(f, s);
	return finish(f, &buf);
}

char *sbx_quote_list(json_t *array)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (f == NULL)
		return NULL;
	fputc('[', f);
	size_t i;
	json_t *v;
	bool first = true;
	json_array_foreach(array, i, v) {
		if (!json_is_string(v))
			continue;
		if (!first)
			fputs(", ", f);
		first = false;
		put_quoted(f, json_string_value(v));
	}
	fputc(']', f);
	return finish(f, &buf);
}
