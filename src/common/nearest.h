/* The known name nearest to a mistyped one, for the configuration's
 * "unknown key" warnings: by edit distance (insert, delete, replace, swap
 * of neighbours), and only when close enough to be a typo. */
#ifndef SBX_COMMON_NEAREST_H
#define SBX_COMMON_NEAREST_H

#include <jansson.h>
#include <stddef.h>

/* Longest name compared: a longer one (hostile input) gets no suggestion
 * rather than a quadratic cost. */
#define SBX_NEAREST_MAX_LEN 64

/* The edit distance of a and b; SIZE_MAX when either is longer than
 * SBX_NEAREST_MAX_LEN. */
size_t sbx_edit_distance(const char *a, const char *b);

/* The entry of known[0..n) nearest to word, or NULL when none is within
 * a third of word's length (at least 1, at most 3 edits). */
const char *sbx_nearest(const char *word, const char *const *known, size_t n);

/* "config: unknown key `PREFIXkey` (did you mean `PREFIXnear`?)", the
 * suggestion left out when nothing is close; the key cut at
 * SBX_NEAREST_MAX_LEN bytes (saying so) and control bytes shown as '?',
 * since key and prefix come from a file or the engine.  Free with free(); NULL
 * when out of memory. */
char *sbx_unknown_key_text(const char *prefix, const char *key, const char *const *known, size_t n);
/* Logs that text as a warning (unknown keys are ignored, not fatal). */
void sbx_warn_unknown_key(const char *prefix, const char *key, const char *const *known, size_t n);
/* Warns so for each field of map `item` (entry `entry` of key `key`)
 * that is not in known[0..n). */
void sbx_warn_unknown_fields(const char *key, const char *entry, json_t *item, const char *const *known, size_t n);

#endif
