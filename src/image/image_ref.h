/* OCI image references, parsed by Docker's rules:
 *   [domain/]path[:tag][@sha256:hex]
 * A first component without '.' or ':' that is not "localhost" (and is all
 * lower case) is part of the path, and the domain is docker.io; one-part
 * docker.io names get "library/"; no tag and no digest means tag "latest". */
#ifndef SBX_IMAGE_REF_H
#define SBX_IMAGE_REF_H

#include <stddef.h>

#include "common/error.h"
#include "image/digest.h"

#define SBX_REF_NAME_MAX 255 /* domain + '/' + path, as in Docker */
#define SBX_REF_TAG_MAX 128

struct sbx_image_ref {
	char domain[SBX_REF_NAME_MAX + 1]; /* "docker.io", "localhost:5000", "[::1]:5000" */
	char path[SBX_REF_NAME_MAX + 1];   /* "library/ubuntu" */
	char tag[SBX_REF_TAG_MAX + 1];     /* "" when only a digest was given */
	char digest[SBX_DIGEST_LEN + 1];   /* "" when none */
};

int sbx_image_ref_parse(const char *s, struct sbx_image_ref *out, sbx_error_t *err);
/* The fully qualified form "domain/path[:tag][@digest]"; -1 if it does not fit. */
int sbx_image_ref_format(const struct sbx_image_ref *ref, char *buf, size_t len);
/* The host (and port) that serves the v2 API: docker.io is served by
 * registry-1.docker.io. */
const char *sbx_image_ref_api_host(const struct sbx_image_ref *ref);
/* The tag, or the digest when the reference is pinned: what the manifest
 * request names. */
const char *sbx_image_ref_manifest_key(const struct sbx_image_ref *ref);

#endif
