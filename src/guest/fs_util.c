#include "guest/fs_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/uuid.h"

int fs_path_error(sbx_error_t *err, int e, const char *path)
{
	switch (e) {
	case ENOENT:
		return sbx_error_set(err, e, "path not found: %s", path);
	case ENOTDIR:
		return sbx_error_set(err, e, "not a directory: %s", path);
	case EISDIR:
		return sbx_error_set(err, e, "is a directory: %s", path);
	case EEXIST:
		return sbx_error_set(err, e, "path already exists: %s", path);
	case ENOTEMPTY:
		return sbx_error_set(err, e, "directory not empty: %s", path);
	case EACCES:
	case EPERM:
		return sbx_error_set(err, e, "permission denied: %s", path);
	case ENAMETOOLONG:
		return sbx_error_set(err, e, "name too long: %s", path);
	}
	return sbx_error_errno(err, e, "%s", path);
}

void fs_entry_from_stat(struct proto_fs_entry *e, const char *name, const struct stat *st)
{
	e->name = (char *)name;
	e->mode = st->st_mode & 07777;
	e->flags = (S_ISDIR(st->st_mode) ? PROTO_FS_ENTRY_DIR : 0) | (S_ISLNK(st->st_mode) ? PROTO_FS_ENTRY_SYMLINK : 0);
	e->size = st->st_size > 0 ? (uint64_t)st->st_size : 0;
	e->mtime = (int64_t)st->st_mtim.tv_sec;
}

const char *fs_last_component(const char *path, char *buf, size_t size)
{
	size_t end = strlen(path);
	/* "a/b/", "a/b/." name "b", as a path library would */
	for (;;) {
		while (end > 1 && path[end - 1] == '/')
			end--;
		if (end >= 2 && path[end - 1] == '.' && path[end - 2] == '/')
			end -= 2;
		else
			break;
	}
	size_t start = end;
	while (start > 0 && path[start - 1] != '/')
		start--;
	size_t n = end - start;
	if (n == 0 || (n == 1 && path[start] == '.') || (n == 2 && strncmp(path + start, "..", 2) == 0) ||
	    n >= size)
		return path;
	memcpy(buf, path + start, n);
	buf[n] = '\0';
	return buf;
}

static size_t seq_len(unsigned char c)
{
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return 2;
	if (c >= 0xe0 && c <= 0xef)
		return 3;
	if (c >= 0xf0 && c <= 0xf4)
		return 4;
	return 0;
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if none. */
static size_t valid_seq(const unsigned char *s, size_t n)
{
	size_t k = seq_len(s[0]);
	if (k == 0 || k > n)
		return 0;
	for (size_t i = 1; i < k; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	/* overlongs, surrogates and > U+10FFFF */
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) || (s[0] == 0xf0 && s[1] < 0x90) ||
	    (s[0] == 0xf4 && s[1] > 0x8f))
		return 0;
	return k;
}

bool fs_utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		size_t k = valid_seq(p + i, n - i);
		if (k == 0)
			return false;
		i += k;
	}
	return true;
}

size_t fs_utf8_boundary(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = n;
	/* back over at most 3 continuation bytes to the lead byte */
	while (i > 0 && n - i < 4 && (p[i - 1] & 0xc0) == 0x80)
		i--;
	if (i > 0 && p[i - 1] >= 0xc0 && (i - 1) + seq_len(p[i - 1]) > n)
		return i - 1;
	return n;
}

char *fs_temp_sibling(const char *path, sbx_error_t *err)
{
	char id[SBX_UUID_STRLEN + 1];
	char *tmp;
	if (sbx_uuid_v4(id) < 0)
		return sbx_error_errno(err, EIO, "random temp name for %s", path), NULL;
	if (asprintf(&tmp, "%s.sbx-tmp-%s", path, id) < 0)
		return sbx_error_errno(err, ENOMEM, "%s", path), NULL;
	return tmp;
}
