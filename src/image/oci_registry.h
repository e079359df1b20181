/* OCI distribution (v2 API) client on libcurl for one repository: token or
 * basic auth, manifests with Docker/OCI Accept types, blobs through
 * redirects, retries with backoff on 429/5xx and network errors, and sha256
 * verification of everything fetched. */
#ifndef SBX_IMAGE_OCI_REGISTRY_H
#define SBX_IMAGE_OCI_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "image/image_config.h"
#include "image/image_ref.h"
#include "image/oci_manifest.h"
#include "image/progress.h"

struct sbx_oci_registry;

/* Chooses the endpoint: the registry_mirrors entry of the ref's registry,
 * else https://<api host> (http:// for a loopback registry). */
struct sbx_oci_registry *sbx_oci_registry_open(const struct sbx_image_ref *ref, const struct sbx_image_config *cfg,
				       sbx_error_t *err);
void sbx_oci_registry_close(struct sbx_oci_registry *reg);
/* "http://127.0.0.1:5000" etc., for messages. */
const char *sbx_oci_registry_base(const struct sbx_oci_registry *reg);

/* Fetches and decodes a manifest or index by tag or digest; *digest gets its
 * sha256, which must equal `reference` when that is a digest. */
int sbx_oci_registry_manifest(struct sbx_oci_registry *reg, const char *reference, struct sbx_manifest *out,
			  char digest[SBX_DIGEST_LEN + 1], sbx_error_t *err);
/* Writes a blob into fd (from offset 0, truncating); fails unless its size
 * and sha256 match the descriptor. */
int sbx_oci_registry_blob(struct sbx_oci_registry *reg, const struct sbx_descriptor *d, int fd, sbx_progress_fn progress,
		      void *ud, sbx_error_t *err);
/* A small blob (the image config) in memory, verified. */
int sbx_oci_registry_blob_mem(struct sbx_oci_registry *reg, const struct sbx_descriptor *d, char **buf, size_t *len,
			  sbx_error_t *err);

#endif
