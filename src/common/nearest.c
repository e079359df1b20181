#include "common/nearest.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

/* Optimal string alignment distance; both lengths ≤ SBX_NEAREST_MAX_LEN. */
static size_t distance(const char *a, size_t la, const char *b, size_t lb)
{
	size_t d[SBX_NEAREST_MAX_LEN + 1][SBX_NEAREST_MAX_LEN + 1];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	}
	return d[la][lb];
}

size_t sbx_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	return la > SBX_NEAREST_MAX_LEN || lb > SBX_NEAREST_MAX_LEN ? SIZE_MAX : distance(a, la, b, lb);
}

const char *sbx_nearest(const char *word, const char *const *known, size_t n)
{
	size_t lw = strlen(word);
	if (lw == 0 || lw > SBX_NEAREST_MAX_LEN)
		return NULL;
	size_t limit = lw / 3 < 1 ? 1 : lw / 3 > 3 ? 3 : lw / 3;
	const char *best = NULL;
	size_t best_d = limit + 1;
	for (size_t i = 0; i < n; i++) {
		size_t lk = strlen(known[i]);
		if (lk > SBX_NEAREST_MAX_LEN)
			continue;
		size_t d = distance(word, lw, known[i], lk);
		if (d < best_d) {
			best_d = d;
			best = known[i];
		}
	}
	return best;
}

char *sbx_unknown_key_text(const char *prefix, const char *key, const char *const *known, size_t n)
{
	char shown[SBX_NEAREST_MAX_LEN + 1];
	size_t len = strnlen(key, SBX_NEAREST_MAX_LEN + 1);
	size_t cut = len > SBX_NEAREST_MAX_LEN ? SBX_NEAREST_MAX_LEN : len;
	memcpy(shown, key, cut);
	shown[cut] = '\0';
	const char *near = sbx_nearest(key, known, n);
	char *text = NULL;
	int rc = near != NULL ? asprintf(&text, "config: unknown key `%s%s%s` (did you mean `%s%s`?)", prefix, shown,
					 cut < len ? "..." : "", prefix, near)
			      : asprintf(&text, "config: unknown key `%s%s%s` (ignored)", prefix, shown,
					 cut < len ? "..." : "");
	if (rc < 0)
		return NULL;
	for (char *c = text; *c != '\0'; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	return text;
}

void sbx_warn_unknown_key(const char *prefix, const char *key, const char *const *known, size_t n)
{
	char *text = sbx_unknown_key_text(prefix, key, known, n);
	sbx_warn("%s", text != NULL ? text : "config: an unknown key (ignored)");
	free(text);
}

void sbx_warn_unknown_fields(const char *key, const char *entry, json_t *item, const char *const *known, size_t n)
{
	const char *f;
	json_t *fv;
	json_object_foreach(item, f, fv) {
		bool found = false;
		for (size_t i = 0; i < n && !found; i++)
			found = strcmp(f, known[i]) == 0;
		if (found)
			continue;
		char prefix[SBX_NEAREST_MAX_LEN * 2 + 8];
		int m = snprintf(prefix, sizeof(prefix), "%s.%.*s%s.", key, SBX_NEAREST_MAX_LEN, entry,
				 strlen(entry) > SBX_NEAREST_MAX_LEN ? "..." : "");
		sbx_warn_unknown_key(m > 0 && (size_t)m < sizeof(prefix) ? prefix : "", f, known, n);
	}
}
