#include "image/image_lookup.h"

#include <errno.h>
#include <string.h>

static bool is_short_digest(const char *name)
{
	size_t len = strlen(name);
	if (strncmp(name, "sha256:", 7) != 0 || len < 7 + SBX_DIGEST_PREFIX_MIN || len > SBX_DIGEST_LEN)
		return false;
	return strspn(name + 7, "0123456789abcdef") == len - 7;
}

const struct sbx_index_entry *sbx_image_lookup(const struct sbx_index *idx, const struct sbx_image_config *cfg,
					       const char *name, sbx_error_t *err)
{
	const char *ref = sbx_image_catalog_ref(cfg, name);
	const struct sbx_index_entry *e = sbx_index_find(idx, ref != NULL ? ref : name);
	if (e != NULL)
		return e;
	const struct sbx_index_entry *found = NULL;
	bool prefix = is_short_digest(name);
	for (size_t i = 0; i < idx->n; i++) {
		const struct sbx_index_entry *c = &idx->entries[i];
		bool match = prefix ? strncmp(c->digest, name, strlen(name)) == 0 : strcmp(c->digest, name) == 0;
		if (!match)
			continue;
		/* Several refs of one digest are one image. */
		if (found != NULL && strcmp(found->digest, c->digest) != 0)
			return sbx_error_set(err, EINVAL, "'%s' names more than one cached image: give more of the digest",
					     name), NULL;
		found = c;
	}
	if (found == NULL)
		return sbx_error_set(err, ENOENT, "no cached image '%s' (sandbox-libkrun image ls lists them)",
				     ref != NULL ? ref : name), NULL;
	return found;
}
