/* HTTP for the OCI registry client (oci_registry_http.h): one GET with
 * libcurl, bodies into capped memory or a hashed file, Bearer tokens from
 * WWW-Authenticate challenges, and retries with backoff on 429, 5xx and
 * network errors; the transport check every URL it follows passes. */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "image/oci_registry_http.h"
#include "image/www_auth.h"

#define ATTEMPTS 4
#define TOKEN_MAX_BYTES (64u << 10)
/* A server asking for a longer pause than this is treated as down. */
#define RETRY_AFTER_MAX_S 60
/* A name that starts "127." ("127.0.0.1.example.com") is not loopback:
 * only an IPv4 literal in 127/8 is. */
bool registry_loopback_host(const char *host)
{
	struct in_addr a;
	if (inet_pton(AF_INET, host, &a) == 1)
		return (ntohl(a.s_addr) >> 24) == 127;
	return strcasecmp(host, "localhost") == 0 || strcmp(host, "::1") == 0 || strcmp(host, "[::1]") == 0;
}

int sbx_url_check_transport(const char *url, sbx_error_t *err)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL;
	int rc = 0;
	if (u == NULL)
		return sbx_error_errno(err, ENOMEM, "url");
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK)
		rc = sbx_error_set(err, 0, "'%s' is not a valid URL", url);
	else if (strcmp(scheme, "https") != 0 && !(strcmp(scheme, "http") == 0 && registry_loopback_host(host)))
		rc = sbx_error_set(err, 0, "'%s': only https:// (or http:// to a loopback address) is allowed", url);
	curl_free(scheme);
	curl_free(host);
	curl_url_cleanup(u);
	return rc;
}

void registry_wipe_free(char *s)
{
	if (s != NULL) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
	struct sink *s = ud;
	size_t n = size * nmemb;
	if (s->written + n > s->limit) {
		s->overflow = true;
		return 0;
	}
	if (s->fd >= 0) {
		size_t off = 0;
		while (off < n) {
			ssize_t w = pwrite(s->fd, data + off, n - off, (off_t)(s->written + off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				s->write_errno = w < 0 ? errno : EIO;
				return 0;
			}
			off += (size_t)w;
		}
	} else {
		if (s->len + n + 1 > s->cap) {
			size_t cap = s->cap ? s->cap : 16384;
			while (cap < s->len + n + 1)
				cap *= 2;
			char *nb = realloc(s->buf, cap);
			if (nb == NULL) {
				s->write_errno = ENOMEM;
				return 0;
			}
			s->buf = nb;
			s->cap = cap;
		}
		memcpy(s->buf + s->len, data, n);
		s->len += n;
		s->buf[s->len] = '\0';
	}
	sbx_error_t herr = NULL;
	if (s->hash != NULL && sbx_sha256_update(s->hash, data, n, &herr) < 0) {
		sbx_error_free(&herr);
		s->write_errno = EIO;
		return 0;
	}
	s->written += n;
	if (s->progress)
		s->progress(s->ud, s->written, s->limit);
	return n;
}

static void copy_header_value(char *dst, size_t cap, const char *v, size_t n)
{
	while (n > 0 && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' '))
		n--;
	while (n > 0 && (*v == ' ' || *v == '\t')) {
		v++;
		n--;
	}
	/* Over-long values are dropped rather than cut: a cut challenge would
	 * send us to the wrong realm. */
	if (n >= cap)
		n = 0;
	memcpy(dst, v, n);
	dst[n] = '\0';
}

/* Retry-After in its delay-seconds form; the HTTP-date form is rare from
 * registries and falls back to our own backoff. */
static long parse_seconds(const char *v)
{
	if (v[0] == '\0' || strlen(v) > 9 || v[strspn(v, "0123456789")] != '\0')
		return -1;
	return strtol(v, NULL, 10);
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *ud)
{
	struct sink *s = ud;
	size_t n = size * nmemb;
	if (n >= 5 && strncmp(data, "HTTP/", 5) == 0) {
		/* a new response (after a redirect): forget the previous headers */
		s->content_type[0] = s->www_auth[0] = '\0';
		s->retry_after = -1;
	} else if (n > 12 && strncasecmp(data, "retry-after:", 12) == 0) {
		char v[32];
		copy_header_value(v, sizeof(v), data + 12, n - 12);
		s->retry_after = parse_seconds(v);
	} else if (n > 13 && strncasecmp(data, "content-type:", 13) == 0) {
		copy_header_value(s->content_type, sizeof(s->content_type), data + 13, n - 13);
	} else if (n > 17 && strncasecmp(data, "www-authenticate:", 17) == 0) {
		copy_header_value(s->www_auth, sizeof(s->www_auth), data + 17, n - 17);
	}
	return n;
}

static int sink_reset(struct sink *s, sbx_error_t *err)
{
	s->len = 0;
	s->written = 0;
	s->overflow = false;
	s->write_errno = 0;
	s->retry_after = -1;
	if (s->fd >= 0 && ftruncate(s->fd, 0) < 0)
		return sbx_error_errno(err, errno, "truncate download");
	if (s->hash != NULL) {
		sbx_sha256_free(s->hash);
		if ((s->hash = sbx_sha256_new(err)) == NULL)
			return -1;
	}
	return 0;
}

/* One HTTP GET; returns the status, or -1 with *curl_failed telling whether
 * a retry might help. */
static long perform(struct sbx_oci_registry *reg, const char *url, const char *accept, struct sink *s, bool basic,
		    bool *transient, sbx_error_t *err)
{
	CURL *c = reg->curl;
	curl_easy_reset(c);
	struct curl_slist *hdrs = NULL, *t;
	if (accept != NULL && (t = curl_slist_append(hdrs, accept)) != NULL)
		hdrs = t;
	if (!basic && reg->auth_hdr != NULL && (t = curl_slist_append(hdrs, reg->auth_hdr)) != NULL)
		hdrs = t;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "sandbox-libkrun/" SBX_VERSION);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, reg->insecure_ok ? "http,https" : "https");
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, reg->insecure_ok ? "http,https" : "https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, s);
	if (basic && reg->user != NULL) {
		/* libcurl sends these to the first host only, never after a redirect. */
		curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(c, CURLOPT_USERNAME, reg->user);
		curl_easy_setopt(c, CURLOPT_PASSWORD, reg->pass);
	}
	CURLcode rc = curl_easy_perform(c);
	curl_slist_free_all(hdrs);
	long status = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	*transient = false;
	if (rc == CURLE_WRITE_ERROR && s->overflow)
		return sbx_error_set(err, 0, "response from %s larger than %llu bytes", url, (unsigned long long)s->limit);
	if (rc == CURLE_WRITE_ERROR && s->write_errno)
		return sbx_error_errno(err, s->write_errno, "saving response from %s", url);
	if (rc != CURLE_OK) {
		*transient = rc == CURLE_COULDNT_CONNECT || rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_PARTIAL_FILE ||
			     rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR || rc == CURLE_GOT_NOTHING ||
			     rc == CURLE_COULDNT_RESOLVE_HOST;
		return sbx_error_set(err, 0, "GET %s: %s", url, curl_easy_strerror(rc));
	}
	return status;
}

static int fetch_token(struct sbx_oci_registry *reg, const struct sbx_www_auth *ch, sbx_error_t *err)
{
	/* Credentials go to the realm: never in clear text off this machine. */
	if (sbx_url_check_transport(ch->realm, err) < 0)
		return sbx_error_prefix(err, "token realm");
	char scope[sizeof(ch->scope) + 300];
	if (ch->scope[0])
		snprintf(scope, sizeof(scope), "%s", ch->scope);
	else if (snprintf(scope, sizeof(scope), "repository:%s:pull", reg->repo) >= (int)sizeof(scope))
		return sbx_error_set(err, 0, "repository name too long");
	char *esc_service = curl_easy_escape(reg->curl, ch->service, 0);
	char *esc_scope = curl_easy_escape(reg->curl, scope, 0);
	char *url = NULL;
	int n = esc_service && esc_scope
			? asprintf(&url, "%s%sservice=%s&scope=%s", ch->realm, strchr(ch->realm, '?') ? "&" : "?",
				   esc_service, esc_scope)
			: -1;
	curl_free(esc_service);
	curl_free(esc_scope);
	if (n < 0)
		return sbx_error_errno(err, ENOMEM, "token request");
	struct sink s = { .fd = -1, .limit = TOKEN_MAX_BYTES };
	bool transient;
	long status = perform(reg, url, NULL, &s, reg->user != NULL, &transient, err);
	free(url);
	int rc = -1;
	if (status < 0)
		goto out;
	if (status != 200) {
		sbx_error_set(err, 0, "token request to %s: HTTP %ld%s", ch->realm, status,
			      status == 401 ? " (credentials refused)" : "");
		goto out;
	}
	json_t *root = json_loadb(s.buf ? s.buf : "", s.len, 0, NULL);
	json_t *tok = json_object_get(root, "token");
	if (!json_is_string(tok))
		tok = json_object_get(root, "access_token");
	if (!json_is_string(tok) || json_string_length(tok) == 0 || json_string_length(tok) > 16384 ||
	    strpbrk(json_string_value(tok), "\r\n") != NULL) {
		sbx_error_set(err, 0, "token response from %s has no usable token", ch->realm);
	} else {
		registry_wipe_free(reg->auth_hdr);
		if (asprintf(&reg->auth_hdr, "Authorization: Bearer %s", json_string_value(tok)) < 0) {
			reg->auth_hdr = NULL;
			sbx_error_errno(err, ENOMEM, "token");
		} else {
			rc = 0;
		}
	}
	json_decref(root);
out:
	if (s.buf)
		explicit_bzero(s.buf, s.len);
	free(s.buf);
	return rc;
}

/* The pause before retry number `attempt` (1-based): the server's
 * Retry-After when it gave one, else 0.5 s doubling. */
static long backoff_ms(int attempt, long retry_after)
{
	if (retry_after >= 0)
		return retry_after * 1000;
	return 500L << (attempt - 1);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* GET with auth challenges answered and transient failures retried. */
int registry_get(struct sbx_oci_registry *reg, const char *path, const char *accept, struct sink *s, sbx_error_t *err)
{
	char *url = NULL;
	if (asprintf(&url, "%s/v2/%s/%s", reg->base, reg->repo, path) < 0)
		return sbx_error_errno(err, ENOMEM, "registry");
	int rc = -1;
	bool challenged = false;
	for (int attempt = 0; attempt < ATTEMPTS;) {
		if (sink_reset(s, err) < 0)
			break;
		bool transient = false;
		long status = perform(reg, url, accept, s, reg->use_basic, &transient, err);
		if (status == 200) {
			rc = 0;
			break;
		}
		if (status == 401 && !challenged) {
			challenged = true;
			struct sbx_www_auth ch;
			if (sbx_www_auth_parse(s->www_auth, &ch, err) < 0)
				break;
			if (strcmp(ch.scheme, "bearer") == 0) {
				if (fetch_token(reg, &ch, err) < 0)
					break;
			} else if (strcmp(ch.scheme, "basic") == 0 && reg->user != NULL) {
				reg->use_basic = true;
			} else {
				sbx_error_set(err, 0, "%s requires credentials (add them to registry_auth)", reg->base);
				break;
			}
			continue;
		}
		if (status > 0 && status != 429 && status < 500) {
			if (status == 401)
				sbx_error_set(err, 0, "GET %s: HTTP 401 (credentials refused)", url);
			else
				sbx_error_set(err, 0, "GET %s: HTTP %ld%s", url, status,
					      status == 404 ? " (not found)" : "");
			break;
		}
		if (status > 0 && s->retry_after > RETRY_AFTER_MAX_S) {
			sbx_error_set(err, 0, "GET %s: HTTP %ld, retry after %ld s", url, status, s->retry_after);
			break;
		}
		if (status > 0)
			sbx_error_set(err, 0, "GET %s: HTTP %ld%s", url, status,
				      status == 429 ? " (too many requests)" : " (server error)");
		else if (!transient)
			break;
		if (++attempt == ATTEMPTS) {
			sbx_error_prefix(err, "gave up after %d attempts", ATTEMPTS);
			break;
		}
		long ms = backoff_ms(attempt, status > 0 ? s->retry_after : -1);
		sbx_info("image: %s; retry %d of %d in %ld ms", sbx_error_msg(*err), attempt, ATTEMPTS - 1, ms);
		sleep_ms(ms);
	}
	free(url);
	if (rc == 0)
		sbx_error_free(err);
	return rc;
}

