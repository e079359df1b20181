#define PCRE2_CODE_UNIT_WIDTH 8
#include "guest/fs_regex.h"

#include <pcre2.h>
#include <errno.h>
#include <stdint.h>

#include "proto/proto.h"

int fs_regex_compile(struct fs_regex *re, const char *pattern, bool literal, bool ignore_case, sbx_error_t *err)
{
	re->code = re->md = re->mctx = NULL;
	/* PCRE2_LITERAL refuses PCRE2_UCP; UTF alone gives Unicode case folding */
	uint32_t opts = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP) | (ignore_case ? PCRE2_CASELESS : 0);
	int ec;
	PCRE2_SIZE off;
	pcre2_code *code = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, opts, &ec, &off, NULL);
	if (code == NULL) {
		PCRE2_UCHAR msg[256];
		if (pcre2_get_error_message(ec, msg, sizeof(msg)) < 0)
			msg[0] = '\0';
		return sbx_error_set(err, PROTO_FS_EREGEX, "bad regex: %s at offset %zu", (char *)msg, (size_t)off);
	}
	re->code = code;
	pcre2_match_context *mctx = pcre2_match_context_create(NULL);
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, NULL);
	re->mctx = mctx;
	re->md = md;
	if (mctx == NULL || md == NULL) {
		fs_regex_free(re);
		return sbx_error_set(err, ENOMEM, "regex: out of memory");
	}
	pcre2_set_match_limit(mctx, FS_REGEX_MATCH_LIMIT);
	pcre2_set_heap_limit(mctx, FS_REGEX_HEAP_LIMIT_KIB);
	return 0;
}

int fs_regex_find(struct fs_regex *re, const char *s, size_t n, size_t start, size_t *ms, size_t *me,
		  sbx_error_t *err)
{
	int rc = pcre2_match(re->code, (PCRE2_SPTR)s, n, start, PCRE2_NO_UTF_CHECK, re->md, re->mctx);
	if (rc == PCRE2_ERROR_NOMATCH)
		return 0;
	if (rc < 0) {
		PCRE2_UCHAR msg[256];
		if (pcre2_get_error_message(rc, msg, sizeof(msg)) < 0)
			msg[0] = '\0';
		return sbx_error_set(err, PROTO_FS_EREGEX, "regex failed: %s", (char *)msg);
	}
	PCRE2_SIZE *ov = pcre2_get_ovector_pointer(re->md);
	*ms = ov[0];
	*me = ov[1];
	/* \K can put the start after the end: treat as empty at the end */
	if (*ms > *me)
		*ms = *me;
	return 1;
}

bool fs_regex_group(struct fs_regex *re, size_t i, size_t *gs, size_t *ge)
{
	if (i >= pcre2_get_ovector_count(re->md))
		return false;
	PCRE2_SIZE *ov = pcre2_get_ovector_pointer(re->md);
	if (ov[2 * i] == PCRE2_UNSET || ov[2 * i] > ov[2 * i + 1])
		return false;
	*gs = ov[2 * i];
	*ge = ov[2 * i + 1];
	return true;
}

int fs_regex_group_number(struct fs_regex *re, const char *name)
{
	int n = pcre2_substring_number_from_name(re->code, (PCRE2_SPTR)name);
	return n > 0 ? n : -1;
}

void fs_regex_free(struct fs_regex *re)
{
	pcre2_match_data_free(re->md);
	pcre2_match_context_free(re->mctx);
	pcre2_code_free(re->code);
	re->code = re->md = re->mctx = NULL;
}
