#include "image/oci_manifest.h"

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/digest.h"

static int copy_str(char *dst, size_t cap, json_t *v, const char *what, sbx_error_t *err)
{
	if (v == NULL) {
		dst[0] = '\0';
		return 0;
	}
	if (!json_is_string(v) || json_string_length(v) >= cap || strlen(json_string_value(v)) != json_string_length(v))
		return sbx_error_set(err, 0, "manifest: bad %s", what);
	memcpy(dst, json_string_value(v), json_string_length(v) + 1);
	return 0;
}

static int decode_descriptor(json_t *o, struct sbx_descriptor *d, bool platform, sbx_error_t *err)
{
	if (!json_is_object(o))
		return sbx_error_set(err, 0, "manifest: descriptor is not an object");
	if (copy_str(d->media_type, sizeof(d->media_type), json_object_get(o, "mediaType"), "mediaType", err) < 0 ||
	    copy_str(d->digest, sizeof(d->digest), json_object_get(o, "digest"), "digest", err) < 0)
		return -1;
	if (!sbx_digest_valid(d->digest))
		return sbx_error_set(err, 0, "manifest: descriptor digest is missing or not sha256");
	json_t *size = json_object_get(o, "size");
	if (!json_is_integer(size) || json_integer_value(size) < 0)
		return sbx_error_set(err, 0, "manifest: descriptor size is missing or negative");
	d->size = json_integer_value(size);
	if (!platform)
		return 0;
	json_t *p = json_object_get(o, "platform");
	if (p == NULL)
		return 0;
	if (!json_is_object(p))
		return sbx_error_set(err, 0, "manifest: platform is not an object");
	return copy_str(d->os, sizeof(d->os), json_object_get(p, "os"), "platform.os", err) < 0 ||
			       copy_str(d->arch, sizeof(d->arch), json_object_get(p, "architecture"), "platform.architecture",
					err) < 0 ||
			       copy_str(d->variant, sizeof(d->variant), json_object_get(p, "variant"), "platform.variant", err) < 0
		       ? -1
		       : 0;
}

static int decode_array(json_t *arr, struct sbx_manifest *m, bool platform, const char *what, sbx_error_t *err)
{
	if (!json_is_array(arr))
		return sbx_error_set(err, 0, "manifest: '%s' is missing or not an array", what);
	size_t n = json_array_size(arr);
	if (n > SBX_MANIFEST_MAX_ENTRIES)
		return sbx_error_set(err, 0, "manifest: too many %s (%zu)", what, n);
	if (n == 0)
		return 0;
	m->entries = calloc(n, sizeof(*m->entries));
	if (m->entries == NULL)
		return sbx_error_errno(err, ENOMEM, "manifest");
	for (size_t i = 0; i < n; i++) {
		if (decode_descriptor(json_array_get(arr, i), &m->entries[i], platform, err) < 0)
			return sbx_error_prefix(err, "%s[%zu]", what, i);
		m->n_entries++;
	}
	return 0;
}

int sbx_manifest_decode(const char *buf, size_t len, const char *content_type, struct sbx_manifest *out,
			sbx_error_t *err)
{
	memset(out, 0, sizeof(*out));
	if (len > SBX_MANIFEST_MAX_BYTES)
		return sbx_error_set(err, 0, "manifest: larger than %u bytes", SBX_MANIFEST_MAX_BYTES);
	json_error_t jerr;
	json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL)
		return sbx_error_set(err, 0, "manifest: invalid JSON: %s", jerr.text);
	int rc = -1;
	char mt[128] = "";
	if (!json_is_object(root)) {
		sbx_error_set(err, 0, "manifest: not a JSON object");
		goto out;
	}
	json_t *sv = json_object_get(root, "schemaVersion");
	if (!json_is_integer(sv) || json_integer_value(sv) != 2) {
		sbx_error_set(err, 0, "manifest: unsupported schemaVersion (only 2)");
		goto out;
	}
	if (copy_str(mt, sizeof(mt), json_object_get(root, "mediaType"), "mediaType", err) < 0)
		goto out;
	if (mt[0] == '\0' && content_type != NULL)
		snprintf(mt, sizeof(mt), "%.*s", (int)strcspn(content_type, "; \t"), content_type);
	/* An OCI document may omit mediaType: its shape tells. */
	if (mt[0] == '\0')
		snprintf(mt, sizeof(mt), "%s",
			 json_object_get(root, "manifests") ? SBX_MT_OCI_INDEX : SBX_MT_OCI_MANIFEST);

	if (strcmp(mt, SBX_MT_OCI_INDEX) == 0 || strcmp(mt, SBX_MT_DOCKER_LIST) == 0) {
		out->kind = SBX_MANIFEST_INDEX;
		rc = decode_array(json_object_get(root, "manifests"), out, true, "manifests", err);
	} else if (strcmp(mt, SBX_MT_OCI_MANIFEST) == 0 || strcmp(mt, SBX_MT_DOCKER_MANIFEST) == 0) {
		out->kind = SBX_MANIFEST_IMAGE;
		rc = decode_descriptor(json_object_get(root, "config"), &out->config, false, err);
		if (rc < 0)
			sbx_error_prefix(err, "config");
		else
			rc = decode_array(json_object_get(root, "layers"), out, false, "layers", err);
	} else {
		sbx_error_set(err, 0, "manifest: unsupported media type '%s'", mt);
	}
out:
	json_decref(root);
	if (rc < 0)
		sbx_manifest_free(out);
	return rc;
}

void sbx_manifest_free(struct sbx_manifest *m)
{
	free(m->entries);
	m->entries = NULL;
	m->n_entries = 0;
}

const char *sbx_host_arch(void)
{
#if defined(__x86_64__)
	return "amd64";
#elif defined(__aarch64__)
	return "arm64";
#else
#error "unsupported host architecture"
#endif
}

int sbx_manifest_pick_platform(const struct sbx_manifest *index, const char *arch, sbx_error_t *err)
{
	for (size_t i = 0; i < index->n_entries; i++) {
		const struct sbx_descriptor *d = &index->entries[i];
		/* arm64 images may say "v8"; any variant of our arch will do. */
		if (strcmp(d->os, "linux") == 0 && strcmp(d->arch, arch) == 0)
			return (int)i;
	}
	char have[512] = "";
	size_t used = 0;
	for (size_t i = 0; i < index->n_entries && used < sizeof(have) - 64; i++) {
		const struct sbx_descriptor *d = &index->entries[i];
		int n = snprintf(have + used, sizeof(have) - used, "%s%s/%s%s%s", used ? ", " : "", d->os[0] ? d->os : "?",
				 d->arch[0] ? d->arch : "?", d->variant[0] ? "/" : "", d->variant);
		if (n < 0 || (size_t)n >= sizeof(have) - used)
			break;
		used += (size_t)n;
	}
	return sbx_error_set(err, 0, "no linux/%s manifest in the image index (it has: %s)", arch,
			     used ? have : "no platforms");
}

int sbx_layer_media_type_ok(const char *mt)
{
	static const char *const ok[] = {
		"application/vnd.oci.image.layer.v1.tar",
		"application/vnd.oci.image.layer.v1.tar+gzip",
		"application/vnd.oci.image.layer.v1.tar+zstd",
		"application/vnd.docker.image.rootfs.diff.tar.gzip",
		"application/vnd.docker.image.rootfs.diff.tar",
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (strcmp(mt, ok[i]) == 0)
			return 1;
	return 0;
}
