#include "adapter/sandbox/shlex.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"

static bool is_sep(char c)
{
	return c == ' ' || c == '\t' || c == '\n';
}

/* Reads one word starting at *pp into `word` (large enough for the rest of
 * the input, since a word never grows); returns false on an unterminated
 * quote or a trailing backslash. */
static bool read_word(const char **pp, char *word)
{
	const char *p = *pp;
	size_t n = 0;
	while (*p != '\0' && !is_sep(*p)) {
		char c = *p++;
		if (c == '\'') {
			while (*p != '\'') {
				if (*p == '\0')
					return false;
				word[n++] = *p++;
			}
			p++;
		} else if (c == '"') {
			while (*p != '"') {
				if (*p == '\0')
					return false;
				if (*p == '\\') {
					p++;
					if (*p == '\0')
						return false;
					if (*p == '\n') {
						p++;
						continue;
					}
					if (strchr("$`\"\\", *p) == NULL)
						word[n++] = '\\';
				}
				word[n++] = *p++;
			}
			p++;
		} else if (c == '\\') {
			if (*p == '\0')
				return false;
			if (*p != '\n')
				word[n++] = *p;
			p++;
		} else {
			word[n++] = c;
		}
	}
	word[n] = '\0';
	*pp = p;
	return true;
}

json_t *sbx_shlex_split(const char *s, sbx_error_t *err)
{
	cleanup_free char *word = malloc(strlen(s) + 1);
	json_t *words = json_array();
	if (word == NULL || words == NULL) {
		json_decref(words);
		return sbx_error_errno(err, ENOMEM, "shlex split"), NULL;
	}
	const char *p = s;
	for (;;) {
		while (is_sep(*p))
			p++;
		if (*p == '#') {
			/* A comment runs to the end of the line. */
			while (*p != '\0' && *p != '\n')
				p++;
			continue;
		}
		if (*p == '\0')
			break;
		if (!read_word(&p, word)) {
			json_decref(words);
			return sbx_error_set(err, EINVAL, "unbalanced quotes"), NULL;
		}
		if (json_array_append_new(words, json_string(word)) < 0) {
			json_decref(words);
			return sbx_error_errno(err, ENOMEM, "shlex split"), NULL;
		}
	}
	return words;
}
