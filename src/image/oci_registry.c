/* The OCI registry client (oci_registry.h): endpoints, credentials,
 * manifests and blobs; the HTTP exchanges are in oci_registry_http.c. */
#include "image/oci_registry.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "image/digest.h"
#include "image/oci_registry_http.h"

#define ACCEPT_MANIFESTS \
	"Accept: " SBX_MT_OCI_INDEX ", " SBX_MT_OCI_MANIFEST ", " SBX_MT_DOCKER_LIST ", " SBX_MT_DOCKER_MANIFEST

static int url_authority(const char *url, char *out, size_t cap)
{
	CURLU *u = curl_url();
	char *host = NULL, *port = NULL;
	int rc = -1;
	if (u != NULL && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
		curl_url_get(u, CURLUPART_PORT, &port, 0);
		int n = snprintf(out, cap, "%s%s%s", host, port ? ":" : "", port ? port : "");
		rc = n < 0 || (size_t)n >= cap ? -1 : 0;
	}
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	return rc;
}

/* "${VAR}" takes the value of VAR; anything else is literal. */
static char *resolve_secret(const char *v, const char *host, sbx_error_t *err)
{
	size_t n = strlen(v);
	const char *val = v;
	char name[256];
	if (n > 3 && v[0] == '$' && v[1] == '{' && v[n - 1] == '}') {
		if (n - 3 >= sizeof(name))
			return sbx_error_set(err, 0, "registry_auth for '%s': variable name too long", host), NULL;
		snprintf(name, sizeof(name), "%.*s", (int)(n - 3), v + 2);
		val = getenv(name);
		if (val == NULL)
			return sbx_error_set(err, 0, "registry_auth for '%s': environment variable %s is not set", host,
					     name),
			       NULL;
	}
	char *s = strdup(val);
	if (s == NULL)
		sbx_error_errno(err, ENOMEM, "registry_auth");
	return s;
}

struct sbx_oci_registry *sbx_oci_registry_open(const struct sbx_image_ref *ref, const struct sbx_image_config *cfg,
				       sbx_error_t *err)
{
	struct sbx_oci_registry *reg = calloc(1, sizeof(*reg));
	if (reg == NULL) {
		sbx_error_errno(err, ENOMEM, "registry");
		return NULL;
	}
	const char *mirror = sbx_image_config_mirror(cfg, ref->domain);
	if (mirror == NULL)
		mirror = sbx_image_config_mirror(cfg, sbx_image_ref_api_host(ref));
	char authority[300];
	int n;
	if (mirror != NULL) {
		size_t len = strlen(mirror);
		while (len > 0 && mirror[len - 1] == '/')
			len--;
		n = asprintf(&reg->base, "%.*s", (int)len, mirror);
	} else {
		const char *host = sbx_image_ref_api_host(ref);
		char bare[300];
		snprintf(bare, sizeof(bare), "%s", host);
		/* strip the port, keeping IPv6 brackets */
		char *colon = bare[0] == '[' ? strstr(bare, "]:") : strchr(bare, ':');
		if (colon != NULL)
			colon[bare[0] == '[' ? 1 : 0] = '\0';
		n = asprintf(&reg->base, "%s://%s", registry_loopback_host(bare) ? "http" : "https", host);
	}
	reg->repo = strdup(ref->path);
	reg->curl = curl_easy_init();
	if (n < 0 || reg->repo == NULL || reg->curl == NULL) {
		if (n < 0)
			reg->base = NULL;
		sbx_error_errno(err, ENOMEM, "registry");
		goto fail;
	}
	if (sbx_url_check_transport(reg->base, err) < 0 || url_authority(reg->base, authority, sizeof(authority)) < 0) {
		if (*err == NULL)
			sbx_error_set(err, 0, "bad registry URL '%s'", reg->base);
		sbx_error_prefix(err, "registry_mirrors");
		goto fail;
	}
	reg->insecure_ok = strncmp(reg->base, "http://", 7) == 0;
	/* Credentials go only to the host they were configured for. */
	const struct sbx_oci_registry_cred *cred = sbx_image_config_cred(cfg, authority);
	if (cred == NULL && mirror == NULL)
		cred = sbx_image_config_cred(cfg, ref->domain);
	if (cred != NULL && ((reg->user = resolve_secret(cred->username, cred->host, err)) == NULL ||
			     (reg->pass = resolve_secret(cred->password, cred->host, err)) == NULL))
		goto fail;
	return reg;
fail:
	sbx_oci_registry_close(reg);
	return NULL;
}

void sbx_oci_registry_close(struct sbx_oci_registry *reg)
{
	if (reg == NULL)
		return;
	if (reg->curl)
		curl_easy_cleanup(reg->curl);
	free(reg->base);
	free(reg->repo);
	registry_wipe_free(reg->auth_hdr);
	registry_wipe_free(reg->user);
	registry_wipe_free(reg->pass);
	free(reg);
}

const char *sbx_oci_registry_base(const struct sbx_oci_registry *reg)
{
	return reg->base;
}

int sbx_oci_registry_manifest(struct sbx_oci_registry *reg, const char *reference, struct sbx_manifest *out,
			  char digest[SBX_DIGEST_LEN + 1], sbx_error_t *err)
{
	struct sink s = { .fd = -1, .limit = SBX_MANIFEST_MAX_BYTES };
	char path[300];
	if (snprintf(path, sizeof(path), "manifests/%s", reference) >= (int)sizeof(path))
		return sbx_error_set(err, 0, "manifest reference too long");
	int rc = registry_get(reg, path, ACCEPT_MANIFESTS, &s, err);
	if (rc == 0)
		rc = sbx_sha256_buf(s.buf ? s.buf : "", s.len, digest, err);
	if (rc == 0 && sbx_digest_valid(reference) && strcmp(reference, digest) != 0)
		rc = sbx_error_set(err, 0, "manifest %s: content has digest %s", reference, digest);
	if (rc == 0)
		rc = sbx_manifest_decode(s.buf ? s.buf : "", s.len, s.content_type, out, err);
	free(s.buf);
	return rc;
}

static int check_blob(struct sink *s, const struct sbx_descriptor *d, sbx_error_t *err)
{
	char got[SBX_DIGEST_LEN + 1];
	if (s->written != (uint64_t)d->size)
		return sbx_error_set(err, 0, "blob %s: got %llu bytes, expected %lld", d->digest,
				     (unsigned long long)s->written, (long long)d->size);
	if (sbx_sha256_final(s->hash, got, err) < 0)
		return -1;
	if (strcmp(got, d->digest) != 0)
		return sbx_error_set(err, 0, "blob %s: content has digest %s (corrupt or tampered)", d->digest, got);
	return 0;
}

/* Fetches blob d into s, hashing it on the way, and checks size and
 * digest. */
static int get_blob(struct sbx_oci_registry *reg, const struct sbx_descriptor *d, struct sink *s, sbx_error_t *err)
{
	if ((s->hash = sbx_sha256_new(err)) == NULL)
		return -1;
	char path[300];
	snprintf(path, sizeof(path), "blobs/%s", d->digest);
	int rc = registry_get(reg, path, NULL, s, err);
	if (rc == 0)
		rc = check_blob(s, d, err);
	sbx_sha256_free(s->hash);
	s->hash = NULL;
	return rc;
}

int sbx_oci_registry_blob(struct sbx_oci_registry *reg, const struct sbx_descriptor *d, int fd, sbx_progress_fn progress,
		      void *ud, sbx_error_t *err)
{
	struct sink s = { .fd = fd, .limit = (uint64_t)d->size, .progress = progress, .ud = ud };
	return get_blob(reg, d, &s, err);
}

int sbx_oci_registry_blob_mem(struct sbx_oci_registry *reg, const struct sbx_descriptor *d, char **buf, size_t *len,
			  sbx_error_t *err)
{
	if (d->size > (int64_t)SBX_MANIFEST_MAX_BYTES)
		return sbx_error_set(err, 0, "blob %s: larger than %u bytes", d->digest, SBX_MANIFEST_MAX_BYTES);
	struct sink s = { .fd = -1, .limit = (uint64_t)d->size };
	int rc = get_blob(reg, d, &s, err);
	if (rc == 0) {
		*buf = s.buf ? s.buf : strdup("");
		*len = s.len;
		if (*buf == NULL)
			rc = sbx_error_errno(err, ENOMEM, "blob");
	} else {
		free(s.buf);
	}
	return rc;
}
