/* The registry client's response handling (src/image/registry.c) against a
 * hostile registry, with libcurl's transfer left out: this file defines the
 * four easy-API calls registry.c makes for a transfer (setopt, perform,
 * getinfo, reset), which the link binds ahead of libcurl's, and serves the
 * responses scripted in the input -- status lines, any headers
 * (Content-Length, Docker-Content-Digest, WWW-Authenticate, Location,
 * Retry-After), bodies -- including redirects, token requests, retries and
 * failed transfers.  libcurl's URL parser and escaping stay the real ones.
 * nanosleep is defined here too, so retry pauses cost nothing (and are
 * checked against the client's cap).
 *
 * Input: one byte choosing the call and the registry, then responses
 * separated by RESP_SEP, each "HTTP/1.1 NNN ...\r\nName: value\r\n\r\nbody",
 * or "!" and one byte: a transfer failing with that CURLcode.  Checked: no
 * request header carries CR or LF (a token must not inject headers),
 * credentials never travel over plain http off loopback, pauses stay within
 * the Retry-After cap, and whatever the client accepts is exactly what the
 * last response delivered, verified against its digest and size. */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <jansson.h>
#include <openssl/sha.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "image/digest.h"
#include "image/image_config.h"
#include "image/image_ref.h"
#include "image/manifest.h"
#include "image/registry.h"

#define RESP_SEP "\nSBXRESP\n"
#define PAUSE_MAX_MS 60000 /* registry.c's RETRY_AFTER_MAX_S */

typedef size_t (*xfer_cb)(char *, size_t, size_t, void *);

/* The options of the transfer being set up, and the scripted responses. */
static struct {
	const char *url;
	const struct curl_slist *headers;
	xfer_cb on_body, on_header;
	void *body_ud, *header_ud;
	bool follow;
	long max_redirs;
	const char *protocols, *redir_protocols;
	const char *user;
	long status;
	/* responses */
	const uint8_t *next;
	size_t left;
	/* what the last transfer's body callback accepted */
	uint8_t *body;
	size_t body_len, body_cap;
} fake;

static void fail(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_registry: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	abort();
}

CURLcode curl_easy_setopt(CURL *curl, CURLoption option, ...)
{
	va_list ap;
	va_start(ap, option);
	switch (option) {
	case CURLOPT_URL: fake.url = va_arg(ap, const char *); break;
	case CURLOPT_HTTPHEADER: fake.headers = va_arg(ap, const struct curl_slist *); break;
	case CURLOPT_WRITEFUNCTION: fake.on_body = va_arg(ap, xfer_cb); break;
	case CURLOPT_WRITEDATA: fake.body_ud = va_arg(ap, void *); break;
	case CURLOPT_HEADERFUNCTION: fake.on_header = va_arg(ap, xfer_cb); break;
	case CURLOPT_HEADERDATA: fake.header_ud = va_arg(ap, void *); break;
	case CURLOPT_FOLLOWLOCATION: fake.follow = va_arg(ap, long) != 0; break;
	case CURLOPT_MAXREDIRS: fake.max_redirs = va_arg(ap, long); break;
	case CURLOPT_PROTOCOLS_STR: fake.protocols = va_arg(ap, const char *); break;
	case CURLOPT_REDIR_PROTOCOLS_STR: fake.redir_protocols = va_arg(ap, const char *); break;
	case CURLOPT_USERNAME: fake.user = va_arg(ap, const char *); break;
	default: break;
	}
	va_end(ap);
	return CURLE_OK;
}

void curl_easy_reset(CURL *curl)
{
	const uint8_t *next = fake.next;
	size_t left = fake.left;
	uint8_t *body = fake.body;
	size_t cap = fake.body_cap;
	memset(&fake, 0, sizeof(fake));
	fake.next = next;
	fake.left = left;
	fake.body = body;
	fake.body_cap = cap;
	fake.max_redirs = -1;
}

CURLcode curl_easy_getinfo(CURL *curl, CURLINFO info, ...)
{
	va_list ap;
	va_start(ap, info);
	if (info == CURLINFO_RESPONSE_CODE)
		*va_arg(ap, long *) = fake.status;
	va_end(ap);
	return CURLE_OK;
}

int nanosleep(const struct timespec *req, struct timespec *rem)
{
	if (req->tv_sec * 1000 + req->tv_nsec / 1000000 > PAUSE_MAX_MS)
		fail("a retry pause beyond the Retry-After cap", NULL);
	return 0;
}

/* Takes the next scripted response; false when none is left. */
static bool next_response(const uint8_t **r, size_t *len)
{
	if (fake.next == NULL)
		return false;
	*r = fake.next;
	const uint8_t *sep = memmem(fake.next, fake.left, RESP_SEP, strlen(RESP_SEP));
	if (sep == NULL) {
		*len = fake.left;
		fake.next = NULL;
	} else {
		*len = (size_t)(sep - fake.next);
		fake.left -= *len + strlen(RESP_SEP);
		fake.next = sep + strlen(RESP_SEP);
	}
	return true;
}

static bool is_loopback_url(const char *url)
{
	static const char *const prefixes[] = { "http://127.", "http://localhost:", "http://localhost/",
						"http://[::1]", NULL };
	for (size_t i = 0; prefixes[i]; i++)
		if (strncmp(url, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

/* libcurl's rule: the scheme must be in the comma-separated list. */
static bool protocol_allowed(const char *url, const char *list)
{
	const char *colon = strstr(url, "://");
	if (colon == NULL || list == NULL)
		return false;
	size_t n = (size_t)(colon - url);
	for (const char *p = list; *p;) {
		size_t m = strcspn(p, ",");
		if (m == n && strncasecmp(p, url, n) == 0)
			return true;
		p += m + (p[m] == ',');
	}
	return false;
}

static void check_request(const char *url)
{
	bool plain = strncasecmp(url, "http://", 7) == 0;
	for (const struct curl_slist *h = fake.headers; h != NULL; h = h->next) {
		if (strpbrk(h->data, "\r\n") != NULL)
			fail("a request header carries CR or LF", h->data);
		if (plain && !is_loopback_url(url) && strncasecmp(h->data, "Authorization:", 14) == 0)
			fail("a token sent over plain http off loopback", url);
	}
	if (plain && !is_loopback_url(url) && fake.user != NULL)
		fail("credentials sent over plain http off loopback", url);
}

static size_t keep_body(const char *p, size_t n)
{
	size_t got = fake.on_body((char *)p, 1, n, fake.body_ud);
	if (got > n)
		fail("the body callback took more than it was given", NULL);
	if (got == 0)
		return 0;
	if (fake.body_len + got > fake.body_cap) {
		size_t cap = fake.body_cap ? fake.body_cap * 2 : 65536;
		while (cap < fake.body_len + got)
			cap *= 2;
		if ((fake.body = realloc(fake.body, cap)) == NULL)
			fail("out of memory", NULL);
		fake.body_cap = cap;
	}
	memcpy(fake.body + fake.body_len, p, got);
	fake.body_len += got;
	return got;
}

/* Serves one response; returns a CURLcode, or -1 after a redirect. */
static int serve(const uint8_t *r, size_t len, char *url, size_t url_cap, int *redirects)
{
	if (len >= 2 && r[0] == '!')
		return r[1] == 0 ? CURLE_COULDNT_CONNECT : r[1];
	const uint8_t *end = memmem(r, len, "\r\n\r\n", 4);
	size_t head_len = end ? (size_t)(end - r) + 4 : len;
	if (len < 12 || memcmp(r, "HTTP/", 5) != 0)
		return CURLE_WEIRD_SERVER_REPLY;
	const char *sp = memchr(r, ' ', head_len);
	if (sp == NULL || (size_t)(sp - (const char *)r) + 4 > head_len)
		return CURLE_WEIRD_SERVER_REPLY;
	long status = 0;
	for (int i = 1; i <= 3; i++) {
		if (sp[i] < '0' || sp[i] > '9')
			return CURLE_WEIRD_SERVER_REPLY;
		status = status * 10 + (sp[i] - '0');
	}
	fake.status = status;
	char location[2048] = "";
	long long content_length = -1;
	for (size_t off = 0; off < head_len;) {
		const uint8_t *nl = memchr(r + off, '\n', head_len - off);
		size_t n = nl ? (size_t)(nl - (r + off)) + 1 : head_len - off;
		char line[4096];
		if (n < sizeof(line)) {
			memcpy(line, r + off, n);
			line[n] = '\0';
			if (strncasecmp(line, "location:", 9) == 0)
				sscanf(line + 9, " %2047[^\r\n]", location);
			else if (strncasecmp(line, "content-length:", 15) == 0 &&
				 sscanf(line + 15, " %lld", &content_length) != 1)
				content_length = -1;
		}
		if (fake.on_header((char *)r + off, 1, n, fake.header_ud) != n)
			return CURLE_WRITE_ERROR;
		off += n;
	}
	bool redirect = status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
	if (fake.follow && redirect && location[0] != '\0') {
		if (fake.max_redirs >= 0 && ++*redirects > fake.max_redirs)
			return CURLE_TOO_MANY_REDIRECTS;
		char next[4096];
		if (strstr(location, "://") != NULL) {
			snprintf(next, sizeof(next), "%s", location);
		} else {
			const char *host = strstr(url, "://");
			const char *path = host ? strchr(host + 3, '/') : NULL;
			int origin = path ? (int)(path - url) : (int)strlen(url);
			snprintf(next, sizeof(next), "%.*s%s%s", origin, url, location[0] == '/' ? "" : "/", location);
		}
		if (!protocol_allowed(next, fake.redir_protocols))
			return CURLE_UNSUPPORTED_PROTOCOL;
		snprintf(url, url_cap, "%s", next);
		return -1;
	}
	size_t body_len = len - head_len;
	bool partial = false;
	if (content_length >= 0 && (unsigned long long)content_length < body_len)
		body_len = (size_t)content_length;
	else if (content_length >= 0 && (unsigned long long)content_length > body_len)
		partial = true;
	fake.body_len = 0;
	for (size_t off = 0; off < body_len;) {
		size_t n = body_len - off < CURL_MAX_WRITE_SIZE ? body_len - off : CURL_MAX_WRITE_SIZE;
		if (keep_body((const char *)r + head_len + off, n) != n)
			return CURLE_WRITE_ERROR;
		off += n;
	}
	return partial ? CURLE_PARTIAL_FILE : CURLE_OK;
}

CURLcode curl_easy_perform(CURL *curl)
{
	char url[4096];
	snprintf(url, sizeof(url), "%s", fake.url ? fake.url : "");
	fake.status = 0;
	fake.body_len = 0;
	if (!protocol_allowed(url, fake.protocols))
		return CURLE_UNSUPPORTED_PROTOCOL;
	int redirects = 0;
	for (;;) {
		check_request(url);
		const uint8_t *r;
		size_t len;
		if (!next_response(&r, &len))
			return CURLE_COULDNT_CONNECT;
		int rc = serve(r, len, url, sizeof(url), &redirects);
		if (rc >= 0)
			return (CURLcode)rc;
	}
}

/* The body of the last response the script would serve with status 200. */
static void last_ok_body(const uint8_t *p, size_t len, const uint8_t **body, size_t *body_len)
{
	*body = NULL;
	*body_len = 0;
	while (len > 0) {
		const uint8_t *sep = memmem(p, len, RESP_SEP, strlen(RESP_SEP));
		size_t n = sep ? (size_t)(sep - p) : len;
		const uint8_t *end = memmem(p, n, "\r\n\r\n", 4);
		if (n > 13 && memcmp(p, "HTTP/", 5) == 0 && memmem(p, n < 16 ? n : 16, " 200", 4) != NULL && end) {
			*body = end + 4;
			*body_len = n - (size_t)(end + 4 - p);
		}
		if (sep == NULL)
			break;
		len -= n + strlen(RESP_SEP);
		p = sep + strlen(RESP_SEP);
	}
}

static void sha256_digest(const void *p, size_t n, char out[SBX_DIGEST_LEN + 1])
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	SHA256(p, n, md);
	strcpy(out, "sha256:");
	for (int i = 0; i < SHA256_DIGEST_LENGTH; i++)
		sprintf(out + 7 + 2 * i, "%02x", md[i]);
}

static void check_delivered(const char *digest, int64_t size)
{
	char got[SBX_DIGEST_LEN + 1];
	sha256_digest(fake.body ? fake.body : (uint8_t *)"", fake.body_len, got);
	if (strcmp(got, digest) != 0 || (size >= 0 && (int64_t)fake.body_len != size))
		fail("the client accepted content other than the response's", digest);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	sbx_log_set_level(SBX_LOG_ERROR);
	setenv("SBX_FUZZ_PASS", "secret", 1);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t op = data[0];
	curl_easy_reset(NULL);
	fake.next = data + 1;
	fake.left = size - 1;

	/* A loopback registry (plain http allowed) or a remote one (https only);
	 * with or without configured credentials. */
	const char *name = op & 4 ? "registry.example/team/app:v1" : "127.0.0.1:5000/team/app:v1";
	struct sbx_image_ref ref;
	struct sbx_image_config cfg;
	sbx_error_t err = NULL;
	sbx_image_config_init(&cfg);
	if (sbx_image_ref_parse(name, &ref, &err) < 0)
		fail("ref", sbx_error_msg(err));
	if (op & 8) {
		json_t *auth = json_pack("{s:{s:s,s:s}}", op & 4 ? "registry.example" : "127.0.0.1:5000", "username",
					 "user", "password", "${SBX_FUZZ_PASS}");
		if (auth == NULL || sbx_image_config_parse_key(&cfg, "registry_auth", auth, &err) < 0)
			fail("config", err ? sbx_error_msg(err) : NULL);
		json_decref(auth);
	}
	struct sbx_registry *reg = sbx_registry_open(&ref, &cfg, &err);
	if (reg == NULL)
		fail("open", sbx_error_msg(err));

	const uint8_t *ok_body;
	size_t ok_len;
	last_ok_body(data + 1, size - 1, &ok_body, &ok_len);
	struct sbx_descriptor d = { .size = (int64_t)ok_len };
	sha256_digest(ok_body ? ok_body : (const uint8_t *)"", ok_len, d.digest);
	switch (op & 3) {
	case 0:
	case 1: { /* a manifest by tag, or by the digest of the last good body */
		struct sbx_manifest m;
		char digest[SBX_DIGEST_LEN + 1];
		const char *reference = op & 1 ? d.digest : "v1";
		if (sbx_registry_manifest(reg, reference, &m, digest, &err) == 0) {
			check_delivered(digest, -1);
			if ((op & 1) && strcmp(digest, d.digest) != 0)
				fail("a manifest by digest came back with another digest", digest);
			sbx_manifest_free(&m);
		}
		break;
	}
	case 2: { /* a small blob (the image config) */
		char *buf = NULL;
		size_t len = 0;
		if (sbx_registry_blob_mem(reg, &d, &buf, &len, &err) == 0) {
			check_delivered(d.digest, d.size);
			if (len != fake.body_len || memcmp(buf, fake.body ? fake.body : (uint8_t *)"", len) != 0)
				fail("blob_mem returned other bytes than it verified", NULL);
			free(buf);
		}
		break;
	}
	default: { /* a layer blob into a file */
		int fd = memfd_create("blob", MFD_CLOEXEC);
		if (fd < 0)
			fail("memfd_create", NULL);
		if (sbx_registry_blob(reg, &d, fd, NULL, NULL, &err) == 0) {
			check_delivered(d.digest, d.size);
			if (lseek(fd, 0, SEEK_END) != d.size)
				fail("the blob file has another size than verified", NULL);
		}
		close(fd);
		break;
	}
	}
	sbx_error_free(&err);
	sbx_registry_close(reg);
	sbx_image_config_free(&cfg);
	return 0;
}
