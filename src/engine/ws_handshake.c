#include "engine/ws_handshake.h"

#include <ctype.h>
#include <errno.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char ws_guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

int ws_handshake_key(char key[WS_KEY_LEN + 1], sbx_error_t *err)
{
	unsigned char raw[16];
	if (RAND_bytes(raw, sizeof(raw)) != 1)
		return sbx_error_set(err, EIO, "no random bytes for the WebSocket key");
	EVP_EncodeBlock((unsigned char *)key, raw, sizeof(raw));
	return 0;
}

int ws_handshake_accept(const char *key, char accept[WS_ACCEPT_LEN + 1], sbx_error_t *err)
{
	char joined[128];
	int n = snprintf(joined, sizeof(joined), "%s%s", key, ws_guid);
	if (n < 0 || (size_t)n >= sizeof(joined))
		return sbx_error_set(err, EINVAL, "WebSocket key too long");
	unsigned char digest[SHA_DIGEST_LENGTH];
	SHA1((const unsigned char *)joined, (size_t)n, digest);
	EVP_EncodeBlock((unsigned char *)accept, digest, sizeof(digest));
	return 0;
}

char *ws_handshake_request(const struct ws_url *url, const char *key, const char *extra, sbx_error_t *err)
{
	char *req = NULL;
	if (asprintf(&req,
		     "GET %s HTTP/1.1\r\n"
		     "Host: %s\r\n"
		     "Upgrade: websocket\r\n"
		     "Connection: Upgrade\r\n"
		     "Sec-WebSocket-Key: %s\r\n"
		     "Sec-WebSocket-Version: 13\r\n"
		     "%s"
		     "\r\n",
		     url->path, url->authority, key, extra != NULL ? extra : "") < 0) {
		sbx_error_errno(err, ENOMEM, "WebSocket request");
		return NULL;
	}
	return req;
}

/* True when the comma-separated header value contains `token`. */
static bool has_token(const char *v, size_t len, const char *token)
{
	size_t tlen = strlen(token);
	size_t i = 0;
	while (i < len) {
		while (i < len && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		size_t start = i;
		while (i < len && v[i] != ',')
			i++;
		size_t end = i;
		while (end > start && (v[end - 1] == ' ' || v[end - 1] == '\t'))
			end--;
		if (end - start == tlen && strncasecmp(v + start, token, tlen) == 0)
			return true;
	}
	return false;
}

static const char *find_header_end(const char *buf, size_t len)
{
	for (size_t i = 0; i + 3 < len; i++)
		if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n')
			return buf + i + 4;
	return NULL;
}

int ws_handshake_check_response(const char *buf, size_t len, const char *key, size_t *header_len,
				sbx_error_t *err)
{
	size_t scan = len < WS_MAX_RESPONSE_HEADER ? len : WS_MAX_RESPONSE_HEADER;
	const char *end = find_header_end(buf, scan);
	if (end == NULL) {
		if (len >= WS_MAX_RESPONSE_HEADER)
			return sbx_error_set(err, EMSGSIZE, "WebSocket handshake response header too large");
		return 0;
	}
	size_t hlen = (size_t)(end - buf);

	const char *line = buf;
	const char *eol = memchr(line, '\r', hlen);
	/* "HTTP/1.1 101 Switching Protocols"; only the code matters. */
	if (eol == NULL || eol - line < 12 || strncmp(line, "HTTP/1.1 ", 9) != 0)
		return sbx_error_set(err, EPROTO, "malformed HTTP status line in the WebSocket handshake");
	if (strncmp(line + 9, "101", 3) != 0 || (eol - line > 12 && line[12] != ' ')) {
		int shown = (int)(eol - line < 64 ? eol - line : 64);
		return sbx_error_set(err, EPROTO, "WebSocket upgrade refused: %.*s", shown, line);
	}

	char expected[WS_ACCEPT_LEN + 1];
	if (ws_handshake_accept(key, expected, err) < 0)
		return -1;
	bool upgrade = false, connection = false, accept_ok = false;
	for (line = eol + 2; line < end - 2; line = eol + 2) {
		eol = memchr(line, '\r', (size_t)(end - line));
		if (eol == NULL || eol[1] != '\n')
			return sbx_error_set(err, EPROTO, "malformed header line in the WebSocket handshake");
		const char *colon = memchr(line, ':', (size_t)(eol - line));
		if (colon == NULL || colon == line)
			return sbx_error_set(err, EPROTO, "malformed header line in the WebSocket handshake");
		size_t nlen = (size_t)(colon - line);
		const char *v = colon + 1;
		while (v < eol && (*v == ' ' || *v == '\t'))
			v++;
		const char *vend = eol;
		while (vend > v && (vend[-1] == ' ' || vend[-1] == '\t'))
			vend--;
		size_t vlen = (size_t)(vend - v);

		if (nlen == 7 && strncasecmp(line, "Upgrade", 7) == 0) {
			upgrade = has_token(v, vlen, "websocket");
		} else if (nlen == 10 && strncasecmp(line, "Connection", 10) == 0) {
			connection = has_token(v, vlen, "upgrade");
		} else if (nlen == 20 && strncasecmp(line, "Sec-WebSocket-Accept", 20) == 0) {
			accept_ok = vlen == WS_ACCEPT_LEN && memcmp(v, expected, WS_ACCEPT_LEN) == 0;
		} else if ((nlen == 24 && strncasecmp(line, "Sec-WebSocket-Extensions", 24) == 0) ||
			   (nlen == 22 && strncasecmp(line, "Sec-WebSocket-Protocol", 22) == 0)) {
			/* We asked for neither: a server that picks one breaks the framing. */
			if (vlen > 0)
				return sbx_error_set(err, EPROTO, "server chose an unrequested WebSocket extension or protocol");
		}
	}
	if (!upgrade || !connection)
		return sbx_error_set(err, EPROTO, "WebSocket handshake lacks Upgrade: websocket / Connection: upgrade");
	if (!accept_ok)
		return sbx_error_set(err, EPROTO, "WebSocket handshake has a wrong Sec-WebSocket-Accept");
	*header_len = hlen;
	return 1;
}
