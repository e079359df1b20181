/* The OCI registry client's insides, shared by oci_registry.c (endpoints,
 * manifests, blobs) and oci_registry_http.c (GET with auth challenges, tokens
 * and retries). */
#ifndef SBX_IMAGE_OCI_REGISTRY_HTTP_H
#define SBX_IMAGE_OCI_REGISTRY_HTTP_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "image/digest.h"
#include "image/progress.h"

struct sbx_oci_registry {
	CURL *curl;
	char *base;      /* scheme://host[:port][/prefix], no trailing '/' */
	char *repo;      /* "library/ubuntu" */
	char *auth_hdr;  /* "Authorization: Bearer ..." once we have a token */
	char *user, *pass; /* resolved credentials, or NULL */
	bool use_basic;
	bool insecure_ok; /* plain http (loopback) allowed for redirects and realms */
};

/* Where a response body goes: memory (capped) or a file, hashed. */
struct sink {
	char *buf;
	size_t len, cap;
	int fd;
	struct sbx_sha256 *hash;
	uint64_t written, limit;
	sbx_progress_fn progress;
	void *ud;
	bool overflow;
	int write_errno;
	/* from the response headers */
	char content_type[128];
	char www_auth[2048];
	long retry_after; /* seconds, -1 when absent or not a number */
};

/* An IPv4 literal in 127/8, localhost or ::1: where plain http is allowed. */
bool registry_loopback_host(const char *host);
/* Accepts https://, and http:// only for a loopback host. */
int sbx_url_check_transport(const char *url, sbx_error_t *err);

/* Zeroes a secret (token, credential) before freeing it; NULL is a no-op. */
void registry_wipe_free(char *s);

/* GET <base>/v2/<repo>/<path> into s, answering auth challenges and
 * retrying transient failures; 0 on a 2xx answer. */
int registry_get(struct sbx_oci_registry *reg, const char *path, const char *accept, struct sink *s,
		 sbx_error_t *err);

#endif
