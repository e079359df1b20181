/* See fake_curl.h. */
#define CURL_DISABLE_TYPECHECK
#include "fake_curl.h"

#include <curl/curl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <time.h>

#define PAUSE_MAX_MS 60000 /* oci_registry_http.c's RETRY_AFTER_MAX_S */

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
	fprintf(stderr, "fake_curl: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
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
	const uint8_t *sep = memmem(fake.next, fake.left, FAKE_CURL_SEP, strlen(FAKE_CURL_SEP));
	if (sep == NULL) {
		*len = fake.left;
		fake.next = NULL;
	} else {
		*len = (size_t)(sep - fake.next);
		fake.left -= *len + strlen(FAKE_CURL_SEP);
		fake.next = sep + strlen(FAKE_CURL_SEP);
	}
	return true;
}

/* The host of a URL as libcurl reads it: after the scheme and any
 * userinfo, up to the port, path, query or fragment; an IPv6 literal in
 * brackets whole.  Host names are case-insensitive. */
static bool is_loopback_url(const char *url)
{
	const char *h = strstr(url, "://");
	if (h == NULL)
		return false;
	h += 3;
	/* libcurl skips extra slashes: "http:///127.0.0.1/" is 127.0.0.1. */
	while (*h == '/')
		h++;
	size_t auth = strcspn(h, "/?#");
	const char *at = memchr(h, '@', auth);
	if (at != NULL) {
		auth -= (size_t)(at + 1 - h);
		h = at + 1;
	}
	size_t n = h[0] == '[' ? strcspn(h, "]") + 1 : strcspn(h, ":/?#");
	if (n > auth)
		n = auth;
	/* As long as the URL may be: libcurl reads "127.0.000…0.1", any
	 * number of zeros, as 127.0.0.1. */
	char host[4096]; /* the longest URL this stand-in builds */
	if (n >= sizeof(host))
		return false;
	memcpy(host, h, n);
	host[n] = '\0';
	/* libcurl reads IPv4 shorthands ("127.1", "127.0.00") as inet_aton does. */
	struct in_addr a;
	if (inet_aton(host, &a) != 0)
		return (ntohl(a.s_addr) >> 24) == 127;
	return strcasecmp(host, "localhost") == 0 || strcmp(host, "[::1]") == 0;
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

/* The scheme, host and port of a URL: its length up to the path.  The
 * extra slashes libcurl skips before the host belong to the origin
 * ("http:///127.0.0.1/a" is 127.0.0.1's, not a host-less one's). */
static size_t origin_len(const char *url)
{
	const char *host = strstr(url, "://");
	if (host == NULL)
		return strlen(url);
	host += 3;
	while (*host == '/')
		host++;
	return strcspn(host, "/?#") + (size_t)(host - url);
}

/* libcurl (7.58 on) sends a custom Authorization header, and basic
 * credentials, only to the origin of the first URL, never to another one a
 * redirect leads to (unless CURLOPT_UNRESTRICTED_AUTH, which we never set):
 * what would reach a redirect's target is checked as libcurl sends it. */
static void check_request(const char *url, const char *first)
{
	bool plain = strncasecmp(url, "http://", 7) == 0;
	size_t n = origin_len(first);
	bool auth_sent = origin_len(url) == n && strncasecmp(url, first, n) == 0;
	for (const struct curl_slist *h = fake.headers; h != NULL; h = h->next) {
		if (strpbrk(h->data, "\r\n") != NULL)
			fail("a request header carries CR or LF", h->data);
		if (auth_sent && plain && !is_loopback_url(url) && strncasecmp(h->data, "Authorization:", 14) == 0)
			fail("a token sent over plain http off loopback", url);
	}
	if (auth_sent && plain && !is_loopback_url(url) && fake.user != NULL)
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

/* The status of a response's first line, or -1. */
static long status_of(const uint8_t *r, size_t head_len)
{
	const uint8_t *sp = memchr(r, ' ', head_len);
	if (head_len < 12 || memcmp(r, "HTTP/", 5) != 0 || sp == NULL || (size_t)(sp - r) + 4 > head_len)
		return -1;
	long status = 0;
	for (int i = 1; i <= 3; i++) {
		if (sp[i] < '0' || sp[i] > '9')
			return -1;
		status = status * 10 + (sp[i] - '0');
	}
	return status;
}

/* Hands every header line to the header callback, noting Location and
 * Content-Length; returns a CURLcode. */
static int deliver_headers(const uint8_t *r, size_t head_len, char location[2048], long long *content_length)
{
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
				 sscanf(line + 15, " %lld", content_length) != 1)
				*content_length = -1;
		}
		if (fake.on_header((char *)r + off, 1, n, fake.header_ud) != n)
			return CURLE_WRITE_ERROR;
		off += n;
	}
	return CURLE_OK;
}

/* Follows a redirect as libcurl does: url becomes the target, whose scheme
 * must be allowed for redirects; returns a CURLcode. */
static int follow(char *url, size_t url_cap, const char *location, int *redirects)
{
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
	return CURLE_OK;
}

/* Hands the body to the body callback in libcurl's chunk size, cut at a
 * shorter Content-Length; a longer one makes a partial transfer. */
static int deliver_body(const uint8_t *body, size_t len, long long content_length)
{
	bool partial = false;
	if (content_length >= 0 && (unsigned long long)content_length < len)
		len = (size_t)content_length;
	else if (content_length >= 0 && (unsigned long long)content_length > len)
		partial = true;
	fake.body_len = 0;
	for (size_t off = 0; off < len;) {
		size_t n = len - off < CURL_MAX_WRITE_SIZE ? len - off : CURL_MAX_WRITE_SIZE;
		if (keep_body((const char *)body + off, n) != n)
			return CURLE_WRITE_ERROR;
		off += n;
	}
	return partial ? CURLE_PARTIAL_FILE : CURLE_OK;
}

/* Serves one response; returns a CURLcode, or -1 after a redirect. */
static int serve(const uint8_t *r, size_t len, char *url, size_t url_cap, int *redirects)
{
	if (len >= 2 && r[0] == '!')
		return r[1] == 0 ? CURLE_COULDNT_CONNECT : r[1];
	const uint8_t *end = memmem(r, len, "\r\n\r\n", 4);
	size_t head_len = end ? (size_t)(end - r) + 4 : len;
	long status = status_of(r, head_len);
	if (status < 0)
		return CURLE_WEIRD_SERVER_REPLY;
	fake.status = status;
	char location[2048] = "";
	long long content_length = -1;
	int rc = deliver_headers(r, head_len, location, &content_length);
	if (rc != CURLE_OK)
		return rc;
	bool redirect = status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
	if (fake.follow && redirect && location[0] != '\0') {
		rc = follow(url, url_cap, location, redirects);
		return rc != CURLE_OK ? rc : -1;
	}
	return deliver_body(r + head_len, len - head_len, content_length);
}

CURLcode curl_easy_perform(CURL *curl)
{
	char url[4096];
	snprintf(url, sizeof(url), "%s", fake.url ? fake.url : "");
	fake.status = 0;
	fake.body_len = 0;
	if (!protocol_allowed(url, fake.protocols))
		return CURLE_UNSUPPORTED_PROTOCOL;
	char first[sizeof(url)];
	snprintf(first, sizeof(first), "%s", url);
	int redirects = 0;
	for (;;) {
		check_request(url, first);
		const uint8_t *r;
		size_t len;
		if (!next_response(&r, &len))
			return CURLE_COULDNT_CONNECT;
		int rc = serve(r, len, url, sizeof(url), &redirects);
		if (rc >= 0)
			return (CURLcode)rc;
	}
}

void fake_curl_load(const uint8_t *script, size_t len)
{
	curl_easy_reset(NULL);
	fake.next = script;
	fake.left = len;
}

const uint8_t *fake_curl_body(size_t *len)
{
	*len = fake.body_len;
	return fake.body != NULL ? fake.body : (const uint8_t *)"";
}

/* The body of the last response the script would serve with status 200. */
const uint8_t *fake_curl_last_ok_body(const uint8_t *p, size_t len, size_t *body_len)
{
	const uint8_t *body = NULL;
	*body_len = 0;
	while (len > 0) {
		const uint8_t *sep = memmem(p, len, FAKE_CURL_SEP, strlen(FAKE_CURL_SEP));
		size_t n = sep ? (size_t)(sep - p) : len;
		const uint8_t *end = memmem(p, n, "\r\n\r\n", 4);
		if (n > 13 && memcmp(p, "HTTP/", 5) == 0 && memmem(p, n < 16 ? n : 16, " 200", 4) != NULL && end) {
			body = end + 4;
			*body_len = n - (size_t)(end + 4 - p);
		}
		if (sep == NULL)
			break;
		len -= n + strlen(FAKE_CURL_SEP);
		p = sep + strlen(FAKE_CURL_SEP);
	}
	return body;
}
