/* PCRE2 for fs::grep and fs::sed: UTF + UCP (Unicode classes as in the
 * predecessor's Rust regex), bounded match effort so a pathological
 * pattern fails instead of hanging the operation. */
#ifndef SBX_GUEST_FS_REGEX_H
#define SBX_GUEST_FS_REGEX_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

#define FS_REGEX_MATCH_LIMIT 10000000u
#define FS_REGEX_HEAP_LIMIT_KIB (64u * 1024u)

struct fs_regex {
	void *code;  /* pcre2_code_8 */
	void *md;    /* pcre2_match_data_8 */
	void *mctx;  /* pcre2_match_context_8 */
};

/* Fails with PROTO_FS_EREGEX "bad regex: ..." when it does not compile.
 * `literal` takes the pattern verbatim. */
int fs_regex_compile(struct fs_regex *re, const char *pattern, bool literal, bool ignore_case, sbx_error_t *err);
/* Searches s[0, n) (valid UTF-8) from `start`.  Returns 1 with the match
 * in [*ms, *me), 0 for none, -1 with *err (match limit). */
int fs_regex_find(struct fs_regex *re, const char *s, size_t n, size_t start, size_t *ms, size_t *me,
		  sbx_error_t *err);
/* Group `i` of the last match ([*gs, *ge)); false when unset or absent. */
bool fs_regex_group(struct fs_regex *re, size_t i, size_t *gs, size_t *ge);
/* Group number of a named group, -1 when there is none. */
int fs_regex_group_number(struct fs_regex *re, const char *name);
void fs_regex_free(struct fs_regex *re);

#endif
