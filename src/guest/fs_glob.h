/* include_glob / exclude_glob of fs::grep and fs::sed: gitignore-style
 * patterns matched against a path relative to the walk root (proto.h,
 * FS_GREP, states the rules).  Matching is O(pattern x path) per pattern:
 * no backtracking blow-up on hostile patterns. */
#ifndef SBX_GUEST_FS_GLOB_H
#define SBX_GUEST_FS_GLOB_H

#include <stdbool.h>

/* Does one pattern match the regular file at `rel` ("a/b/c.txt")? */
bool fs_glob_match(const char *pattern, const char *rel);
/* Does it match the directory `rel` itself (so everything below it)? */
bool fs_glob_match_dir(const char *pattern, const char *rel);
/* A file is kept when no exclude matches and, if include is non-empty,
 * some include does.  Both lists are NULL-terminated (or NULL). */
bool fs_glob_keep(char *const *include, char *const *exclude, const char *rel);
/* True when every file below directory `rel` would be excluded. */
bool fs_glob_prune(char *const *exclude, const char *rel);

#endif
