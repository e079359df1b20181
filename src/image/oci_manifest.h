/* Decoding of image manifests and indexes (Docker schema 2 and OCI), and the
 * choice of a platform from an index.  Input is hostile: sizes and counts
 * are capped and every digest is validated. */
#ifndef SBX_IMAGE_OCI_MANIFEST_H
#define SBX_IMAGE_OCI_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "image/image_ref.h"

#define SBX_MANIFEST_MAX_BYTES (4u << 20)
#define SBX_MANIFEST_MAX_ENTRIES 1024

#define SBX_MT_OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define SBX_MT_OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define SBX_MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define SBX_MT_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"

struct sbx_descriptor {
	char media_type[128];
	char digest[SBX_DIGEST_LEN + 1];
	int64_t size;
	char os[32], arch[32], variant[32]; /* index entries only */
};

enum sbx_manifest_kind { SBX_MANIFEST_IMAGE, SBX_MANIFEST_INDEX };

struct sbx_manifest {
	enum sbx_manifest_kind kind;
	struct sbx_descriptor config;   /* images only */
	struct sbx_descriptor *entries; /* layers of an image, manifests of an index */
	size_t n_entries;
};

/* content_type is the HTTP Content-Type (may be NULL); the document's own
 * mediaType wins when present. */
int sbx_manifest_decode(const char *buf, size_t len, const char *content_type, struct sbx_manifest *out,
			sbx_error_t *err);
void sbx_manifest_free(struct sbx_manifest *m);

/* The GOARCH name of the machine we run on ("amd64", "arm64"). */
const char *sbx_host_arch(void);
/* Index of the linux/<arch> entry of an index; -1 and an error listing the
 * platforms it has otherwise. */
int sbx_manifest_pick_platform(const struct sbx_manifest *index, const char *arch, sbx_error_t *err);
/* Layer media types we can apply (tar, gzip or zstd). */
int sbx_layer_media_type_ok(const char *media_type);

#endif
