#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engine/ws_handshake.h"
#include "harness.h"

/* RFC 6455 section 1.3. */
#define RFC_KEY "dGhlIHNhbXBsZSBub25jZQ=="
#define RFC_ACCEPT "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

TEST(handshake_accept_rfc_example)
{
	char accept[WS_ACCEPT_LEN + 1];
	sbx_error_t err = NULL;
	CHECK_INT(ws_handshake_accept(RFC_KEY, accept, &err), 0);
	CHECK_STR(accept, RFC_ACCEPT);
}

TEST(handshake_key_is_random_base64)
{
	char a[WS_KEY_LEN + 1], b[WS_KEY_LEN + 1];
	sbx_error_t err = NULL;
	CHECK_INT(ws_handshake_key(a, &err), 0);
	CHECK_INT(ws_handshake_key(b, &err), 0);
	CHECK_INT(strlen(a), WS_KEY_LEN);
	CHECK(a[22] == '=' && a[23] == '=');
	CHECK(strcmp(a, b) != 0);
}

TEST(handshake_request_text)
{
	struct ws_url u;
	sbx_error_t err = NULL;
	CHECK_INT(ws_url_parse("ws://[::1]:49134/ws/channels/c1?key=k&dir=write", &u, &err), 0);
	char *req = ws_handshake_request(&u, RFC_KEY, NULL, &err);
	ws_url_free(&u);
	CHECK(req != NULL);
	CHECK_STR(req, "GET /ws/channels/c1?key=k&dir=write HTTP/1.1\r\n"
		       "Host: [::1]:49134\r\n"
		       "Upgrade: websocket\r\n"
		       "Connection: Upgrade\r\n"
		       "Sec-WebSocket-Key: " RFC_KEY "\r\n"
		       "Sec-WebSocket-Version: 13\r\n\r\n");
	free(req);
}

TEST(handshake_request_carries_extra_headers)
{
	struct ws_url u;
	sbx_error_t err = NULL;
	CHECK_INT(ws_url_parse("ws://127.0.0.1:49134/", &u, &err), 0);
	char *req = ws_handshake_request(&u, RFC_KEY, "Authorization: Bearer t\r\nX-Tenant: a\r\n", &err);
	ws_url_free(&u);
	CHECK(req != NULL);
	CHECK_STR(req, "GET / HTTP/1.1\r\n"
		       "Host: 127.0.0.1:49134\r\n"
		       "Upgrade: websocket\r\n"
		       "Connection: Upgrade\r\n"
		       "Sec-WebSocket-Key: " RFC_KEY "\r\n"
		       "Sec-WebSocket-Version: 13\r\n"
		       "Authorization: Bearer t\r\nX-Tenant: a\r\n\r\n");
	free(req);
}

static int check(const char *resp, size_t *hlen)
{
	sbx_error_t err = NULL;
	int r = ws_handshake_check_response(resp, strlen(resp), RFC_KEY, hlen, &err);
	sbx_error_free(&err);
	return r;
}

#define OK_RESPONSE                                                     \
	"HTTP/1.1 101 Switching Protocols\r\n"                          \
	"Upgrade: websocket\r\n"                                        \
	"Connection: Upgrade\r\n"                                       \
	"Sec-WebSocket-Accept: " RFC_ACCEPT "\r\n\r\n"

TEST(handshake_response_valid)
{
	size_t hlen = 0;
	CHECK_INT(check(OK_RESPONSE, &hlen), 1);
	CHECK_INT(hlen, strlen(OK_RESPONSE));
	/* Frame bytes after the header are not part of it; header names and
	 * tokens are case-insensitive and lists are allowed. */
	const char *r2 = "HTTP/1.1 101 OK\r\nupgrade:  WebSocket \r\nconnection: keep-alive, UPGRADE\r\n"
			 "sec-websocket-accept:" RFC_ACCEPT "\r\nX-Other: y\r\n\r\n\x81\x02hi";
	CHECK_INT(check(r2, &hlen), 1);
	CHECK_INT(hlen, strlen(r2) - 4);
}

TEST(handshake_response_incomplete)
{
	size_t hlen;
	const char *full = OK_RESPONSE;
	char part[256];
	for (size_t n = 0; n + 1 < strlen(full); n += 7) {
		memcpy(part, full, n);
		part[n] = '\0';
		CHECK_INT(check(part, &hlen), 0);
	}
}

TEST(handshake_response_rejects)
{
	static const char *const bad[] = {
		"HTTP/1.1 200 OK\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " RFC_ACCEPT "\r\n\r\n",
		"HTTP/1.1 404 Not Found\r\n\r\n",
		"HTTP/1.0 101 Switching\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " RFC_ACCEPT "\r\n\r\n",
		"HTTP/1.1 1010 X\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " RFC_ACCEPT "\r\n\r\n",
		"HTTP/1.1 101 S\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " RFC_ACCEPT "\r\n\r\n",
		"HTTP/1.1 101 S\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: " RFC_ACCEPT "\r\n\r\n",
		"HTTP/1.1 101 S\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
		"HTTP/1.1 101 S\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: AAAAPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
		"HTTP/1.1 101 S\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " RFC_ACCEPT "x\r\n\r\n",
		"HTTP/1.1 101 S\r\nUpgrade: h2c\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " RFC_ACCEPT "\r\n\r\n",
		"HTTP/1.1 101 S\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " RFC_ACCEPT
		"\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n",
		"HTTP/1.1 101 S\r\nUpgrade websocket\r\n\r\n",
		"HTTP/1.1 101 S\r\n: x\r\n\r\n",
		"garbage\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t hlen;
		if (check(bad[i], &hlen) != -1)
			CHECK_STR(bad[i], "(rejected)");
	}
}

TEST(handshake_response_header_cap)
{
	size_t n = WS_MAX_RESPONSE_HEADER + 100;
	char *big = malloc(n + 1);
	CHECK(big != NULL);
	memcpy(big, "HTTP/1.1 101 S\r\n", 16);
	memset(big + 16, 'a', n - 16);
	big[n] = '\0';
	size_t hlen;
	int r = check(big, &hlen);
	free(big);
	CHECK_INT(r, -1);
}
