#include "image/image_index.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "image/digest.h"

#define INDEX_MAX_BYTES (16u << 20)
#define INDEX_MAX_ENTRIES 100000

static int lock_index(const char *root, int op, sbx_error_t *err)
{
	char path[4096];
	if (snprintf(path, sizeof(path), "%s/index.lock", root) >= (int)sizeof(path))
		return sbx_error_set(err, ENAMETOOLONG, "state directory path too long");
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return sbx_error_errno(err, errno, "open '%s'", path);
	while (flock(fd, op) < 0) {
		if (errno != EINTR) {
			int e = errno;
			close(fd);
			return sbx_error_errno(err, e, "lock '%s'", path);
		}
	}
	return fd;
}

static int load(const char *root, struct sbx_index *idx, sbx_error_t *err)
{
	memset(idx, 0, sizeof(*idx));
	char path[4096];
	if (snprintf(path, sizeof(path), "%s/index.json", root) >= (int)sizeof(path))
		return sbx_error_set(err, ENAMETOOLONG, "state directory path too long");
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		/* room for the entry a put may add */
		idx->entries = calloc(1, sizeof(*idx->entries));
		return idx->entries ? 0 : sbx_error_errno(err, ENOMEM, "image index");
	}
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return sbx_error_errno(err, errno, "image index '%s'", path);
	if (st.st_size > (off_t)INDEX_MAX_BYTES)
		return sbx_error_set(err, 0, "image index '%s': larger than %u bytes", path, INDEX_MAX_BYTES);
	cleanup_free char *buf = malloc((size_t)st.st_size + 1);
	if (buf == NULL)
		return sbx_error_errno(err, ENOMEM, "image index");
	ssize_t got = pread(fd, buf, (size_t)st.st_size, 0);
	if (got != (ssize_t)st.st_size)
		return sbx_error_errno(err, got < 0 ? errno : EIO, "read '%s'", path);
	json_error_t jerr;
	json_t *doc = json_loadb(buf, (size_t)got, JSON_REJECT_DUPLICATES, &jerr);
	if (doc == NULL)
		return sbx_error_set(err, 0, "image index '%s': %s", path, jerr.text);
	int rc = 0;
	json_t *arr = json_object_get(doc, "images");
	size_t n = json_array_size(arr);
	if (!json_is_array(arr) || n > INDEX_MAX_ENTRIES) {
		rc = sbx_error_set(err, 0, "image index '%s': malformed", path);
		goto out;
	}
	idx->entries = calloc(n + 1, sizeof(*idx->entries));
	if (idx->entries == NULL) {
		rc = sbx_error_errno(err, ENOMEM, "image index");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(arr, i);
		const char *ref = json_string_value(json_object_get(e, "ref"));
		const char *digest = json_string_value(json_object_get(e, "digest"));
		json_t *size = json_object_get(e, "size"), *used = json_object_get(e, "last_used");
		if (ref == NULL || digest == NULL || !sbx_digest_valid(digest) || strlen(ref) >= sizeof(idx->entries->ref) ||
		    !json_is_integer(size) || !json_is_integer(used)) {
			rc = sbx_error_set(err, 0, "image index '%s': malformed entry %zu", path, i);
			goto out;
		}
		struct sbx_index_entry *ie = &idx->entries[idx->n++];
		strcpy(ie->ref, ref);
		strcpy(ie->digest, digest);
		ie->size = (uint64_t)json_integer_value(size);
		ie->last_used = json_integer_value(used);
	}
out:
	json_decref(doc);
	if (rc < 0)
		sbx_index_free(idx);
	return rc;
}

static int save(const char *root, const struct sbx_index *idx, sbx_error_t *err)
{
	json_t *arr = json_array();
	json_t *doc = json_pack("{s:o}", "images", arr);
	if (doc == NULL)
		return sbx_error_errno(err, ENOMEM, "image index");
	for (size_t i = 0; i < idx->n; i++) {
		const struct sbx_index_entry *e = &idx->entries[i];
		if (json_array_append_new(arr, json_pack("{s:s,s:s,s:I,s:I}", "ref", e->ref, "digest", e->digest, "size",
							 (json_int_t)e->size, "last_used", (json_int_t)e->last_used)) < 0) {
			json_decref(doc);
			return sbx_error_errno(err, ENOMEM, "image index");
		}
	}
	char tmp[4096], path[4096];
	cleanup_close int fd = -1;
	int rc = 0;
	if (snprintf(tmp, sizeof(tmp), "%s/index.json.tmp", root) >= (int)sizeof(tmp) ||
	    snprintf(path, sizeof(path), "%s/index.json", root) >= (int)sizeof(path))
		rc = sbx_error_set(err, ENAMETOOLONG, "state directory path too long");
	else if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0)
		rc = sbx_error_errno(err, errno, "create '%s'", tmp);
	else if ((errno = 0, json_dumpfd(doc, fd, JSON_INDENT(1))) < 0 || fsync(fd) < 0)
		rc = sbx_error_errno(err, errno ? errno : EIO, "write '%s'", tmp);
	else if (rename(tmp, path) < 0)
		rc = sbx_error_errno(err, errno, "rename '%s'", tmp);
	if (rc < 0 && fd >= 0)
		unlink(tmp);
	json_decref(doc);
	return rc;
}

int sbx_index_read(const char *root, struct sbx_index *idx, sbx_error_t *err)
{
	cleanup_close int lock = lock_index(root, LOCK_SH, err);
	if (lock < 0)
		return -1;
	return load(root, idx, err);
}

void sbx_index_free(struct sbx_index *idx)
{
	free(idx->entries);
	idx->entries = NULL;
	idx->n = 0;
}

const struct sbx_index_entry *sbx_index_find(const struct sbx_index *idx, const char *ref)
{
	for (size_t i = 0; i < idx->n; i++)
		if (strcmp(idx->entries[i].ref, ref) == 0)
			return &idx->entries[i];
	return NULL;
}

int sbx_index_uses_digest(const struct sbx_index *idx, const char *digest)
{
	for (size_t i = 0; i < idx->n; i++)
		if (strcmp(idx->entries[i].digest, digest) == 0)
			return 1;
	return 0;
}

enum op { OP_PUT, OP_TOUCH, OP_REMOVE };

static int update(const char *root, enum op op, const char *key, const char *digest, uint64_t size, size_t *removed,
		  sbx_error_t *err)
{
	if (strlen(key) >= sizeof(((struct sbx_index_entry *)0)->ref))
		return sbx_error_set(err, 0, "image index: reference too long");
	cleanup_close int lock = lock_index(root, LOCK_EX, err);
	if (lock < 0)
		return -1;
	struct sbx_index idx;
	if (load(root, &idx, err) < 0)
		return -1;
	int64_t now = (int64_t)time(NULL);
	struct sbx_index_entry *e = (struct sbx_index_entry *)sbx_index_find(&idx, key);
	size_t gone = 0;
	int rc = 0;
	switch (op) {
	case OP_PUT:
		if (e == NULL) {
			/* load() leaves room for one more entry */
			e = &idx.entries[idx.n++];
			strcpy(e->ref, key);
		}
		strcpy(e->digest, digest);
		e->size = size;
		e->last_used = now;
		break;
	case OP_TOUCH:
		if (e == NULL)
			goto out;
		e->last_used = now;
		break;
	case OP_REMOVE:
		for (size_t i = 0; i < idx.n;) {
			if (strcmp(idx.entries[i].ref, key) == 0 || strcmp(idx.entries[i].digest, key) == 0) {
				idx.entries[i] = idx.entries[--idx.n];
				gone++;
			} else {
				i++;
			}
		}
		if (removed)
			*removed = gone;
		if (gone == 0)
			goto out;
		break;
	}
	rc = save(root, &idx, err);
out:
	sbx_index_free(&idx);
	return rc;
}

int sbx_index_put(const char *root, const char *ref, const char *digest, uint64_t size, sbx_error_t *err)
{
	return update(root, OP_PUT, ref, digest, size, NULL, err);
}

int sbx_index_touch(const char *root, const char *ref, sbx_error_t *err)
{
	return update(root, OP_TOUCH, ref, NULL, 0, NULL, err);
}

int sbx_index_remove(const char *root, const char *key, size_t *removed, sbx_error_t *err)
{
	return update(root, OP_REMOVE, key, NULL, 0, removed, err);
}
