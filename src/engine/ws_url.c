#include "engine/ws_url.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/cleanup.h"

static bool host_char_ok(char c)
{
	return isalnum((unsigned char)c) || c == '-' || c == '.' || c == '_';
}

/* Path and query end up verbatim in the request line. */
static bool path_char_ok(char c)
{
	return (unsigned char)c > 0x20 && (unsigned char)c < 0x7f && c != '#';
}

static int parse_port(const char *s, size_t len, int *port, sbx_error_t *err)
{
	if (len == 0 || len > 5)
		return sbx_error_set(err, EINVAL, "invalid port");
	int v = 0;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return sbx_error_set(err, EINVAL, "invalid port");
		v = v * 10 + (s[i] - '0');
	}
	if (v < 1 || v > 65535)
		return sbx_error_set(err, EINVAL, "port out of range");
	*port = v;
	return 0;
}

int ws_url_parse(const char *s, struct ws_url *out, sbx_error_t *err)
{
	memset(out, 0, sizeof(*out));
	if (s == NULL || strnlen(s, WS_URL_MAX + 1) > WS_URL_MAX)
		return sbx_error_set(err, EINVAL, "URL missing or too long");

	const char *p;
	if (strncasecmp(s, "ws://", 5) == 0) {
		p = s + 5;
	} else if (strncasecmp(s, "wss://", 6) == 0) {
		out->tls = true;
		p = s + 6;
	} else {
		return sbx_error_set(err, EINVAL, "URL scheme must be ws:// or wss://");
	}

	size_t alen = strcspn(p, "/?#");
	const char *auth = p, *rest = p + alen;
	if (memchr(auth, '@', alen) != NULL)
		return sbx_error_set(err, EINVAL, "user info in URL is not supported");

	const char *host;
	size_t hlen;
	const char *after;
	bool v6 = false;
	if (alen > 0 && auth[0] == '[') {
		const char *close = memchr(auth, ']', alen);
		if (close == NULL)
			return sbx_error_set(err, EINVAL, "unterminated IPv6 literal");
		host = auth + 1;
		hlen = (size_t)(close - host);
		after = close + 1;
		v6 = true;
	} else {
		const char *colon = memchr(auth, ':', alen);
		host = auth;
		hlen = colon != NULL ? (size_t)(colon - auth) : alen;
		after = auth + hlen;
	}
	if (hlen == 0)
		return sbx_error_set(err, EINVAL, "empty host in URL");

	cleanup_free char *h = strndup(host, hlen);
	if (h == NULL)
		return sbx_error_errno(err, ENOMEM, "URL");
	if (v6) {
		struct in6_addr a;
		if (inet_pton(AF_INET6, h, &a) != 1)
			return sbx_error_set(err, EINVAL, "invalid IPv6 literal in URL");
	} else {
		for (size_t i = 0; i < hlen; i++)
			if (!host_char_ok(h[i]))
				return sbx_error_set(err, EINVAL, "invalid character in URL host");
	}

	int port = out->tls ? 443 : 80;
	bool explicit_port = false;
	if (after < rest) {
		if (*after != ':')
			return sbx_error_set(err, EINVAL, "garbage after URL host");
		if (parse_port(after + 1, (size_t)(rest - after - 1), &port, err) < 0)
			return -1;
		explicit_port = true;
	}

	if (*rest == '#')
		return sbx_error_set(err, EINVAL, "fragment in a WebSocket URL");
	for (const char *c = rest; *c != '\0'; c++)
		if (!path_char_ok(*c))
			return sbx_error_set(err, EINVAL, "invalid character in URL path");

	cleanup_free char *path = NULL;
	cleanup_free char *authority = NULL;
	if (asprintf(&path, "%s%s", *rest == '/' ? "" : "/", rest) < 0)
		path = NULL;
	bool show_port = explicit_port && port != (out->tls ? 443 : 80);
	char portbuf[8] = "";
	if (show_port)
		snprintf(portbuf, sizeof(portbuf), ":%d", port);
	if (asprintf(&authority, "%s%s%s%s", v6 ? "[" : "", h, v6 ? "]" : "", portbuf) < 0)
		authority = NULL;
	if (path == NULL || authority == NULL)
		return sbx_error_errno(err, ENOMEM, "URL");

	out->host = sbx_steal_ptr(h);
	out->port = port;
	out->path = sbx_steal_ptr(path);
	out->authority = sbx_steal_ptr(authority);
	return 0;
}

void ws_url_free(struct ws_url *u)
{
	free(u->host);
	free(u->path);
	free(u->authority);
	memset(u, 0, sizeof(*u));
}

/* Percent-encodes everything but RFC 3986 unreserved characters. */
static char *pct_encode(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strnlen(s, WS_URL_MAX + 1);
	if (n > WS_URL_MAX)
		return NULL;
	char *out = malloc(3 * n + 1);
	if (out == NULL)
		return NULL;
	char *p = out;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
			*p++ = (char)c;
		} else {
			*p++ = '%';
			*p++ = hex[c >> 4];
			*p++ = hex[c & 0xf];
		}
	}
	*p = '\0';
	return out;
}

char *ws_url_channel(const char *engine_url, const char *channel_id, const char *access_key, const char *dir,
		     sbx_error_t *err)
{
	if (channel_id == NULL || *channel_id == '\0' || access_key == NULL || dir == NULL ||
	    (strcmp(dir, "read") != 0 && strcmp(dir, "write") != 0)) {
		sbx_error_set(err, EINVAL, "channel URL needs an id, a key and dir read or write");
		return NULL;
	}
	struct ws_url u;
	if (ws_url_parse(engine_url, &u, err) < 0)
		return NULL;
	cleanup_free char *id = pct_encode(channel_id);
	cleanup_free char *key = pct_encode(access_key);
	char *out = NULL;
	if (id == NULL || key == NULL ||
	    asprintf(&out, "%s://%s/ws/channels/%s?key=%s&dir=%s", u.tls ? "wss" : "ws", u.authority, id, key, dir) < 0) {
		out = NULL;
		sbx_error_set(err, EINVAL, "channel URL too long or out of memory");
	}
	ws_url_free(&u);
	return out;
}
