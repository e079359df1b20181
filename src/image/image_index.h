/* The image index: which reference resolved to which stored image, its
 * size and when it was last used.  One JSON file, rewritten atomically
 * under a lock file. */
#ifndef SBX_IMAGE_INDEX_H
#define SBX_IMAGE_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "image/image_ref.h"

struct sbx_index_entry {
	char ref[2 * SBX_REF_NAME_MAX + 2];
	char digest[SBX_DIGEST_LEN + 1];
	uint64_t size;
	int64_t last_used;
};

struct sbx_index {
	struct sbx_index_entry *entries;
	size_t n;
};

/* Reads <root>/index.json (absent means empty). */
int sbx_index_read(const char *root, struct sbx_index *idx, sbx_error_t *err);
void sbx_index_free(struct sbx_index *idx);
const struct sbx_index_entry *sbx_index_find(const struct sbx_index *idx, const char *ref);

/* Records ref -> digest (replacing an older digest for ref), now as last use. */
int sbx_index_put(const char *root, const char *ref, const char *digest, uint64_t size, sbx_error_t *err);
/* Marks ref as used now. */
int sbx_index_touch(const char *root, const char *ref, sbx_error_t *err);
/* Removes every entry whose ref or digest equals key; *removed counts them. */
int sbx_index_remove(const char *root, const char *key, size_t *removed, sbx_error_t *err);
/* Whether any entry still names digest (after a removal). */
int sbx_index_uses_digest(const struct sbx_index *idx, const char *digest);

#endif
