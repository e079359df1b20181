/* Small helpers shared by the guest's fs operations. */
#ifndef SBX_GUEST_FS_UTIL_H
#define SBX_GUEST_FS_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "common/error.h"
#include "proto/proto_msg.h"

/* Fills *err for errno e about `path`, worded so the host's S-code prefix
 * reads well ("path not found: /x", "not a directory: /x", ...). */
int fs_path_error(sbx_error_t *err, int e, const char *path);
/* An FsEntry for `name` from an lstat result. */
void fs_entry_from_stat(struct proto_fs_entry *e, const char *name, const struct stat *st);
/* The last component of path ("b" for "/a/b/", "/" for "/") into buf;
 * the whole path when there is none. */
const char *fs_last_component(const char *path, char *buf, size_t size);
/* The leading bytes of s[0, n) that form whole UTF-8 characters (cuts a
 * truncated character off the end). */
size_t fs_utf8_boundary(const char *s, size_t n);
bool fs_utf8_valid(const char *s, size_t n);
/* "<path>.sbx-tmp-<uuid>" (malloc'd), for temp siblings renamed into
 * place. */
char *fs_temp_sibling(const char *path, sbx_error_t *err);

#endif
