/* The client side of the RFC 6455 opening handshake: the HTTP/1.1 Upgrade
 * request and the check of the server's 101 response. */
#ifndef SBX_ENGINE_WS_HANDSHAKE_H
#define SBX_ENGINE_WS_HANDSHAKE_H

#include <stddef.h>

#include "common/error.h"
#include "engine/ws_url.h"

#define WS_KEY_LEN 24    /* base64 of 16 random bytes */
#define WS_ACCEPT_LEN 28 /* base64 of a SHA-1 digest */
#define WS_MAX_RESPONSE_HEADER (16 * 1024)

/* A fresh random Sec-WebSocket-Key. */
int ws_handshake_key(char key[WS_KEY_LEN + 1], sbx_error_t *err);
/* The Sec-WebSocket-Accept value a server must answer for `key`. */
int ws_handshake_accept(const char *key, char accept[WS_ACCEPT_LEN + 1], sbx_error_t *err);
/* The GET request for `url` (a new string); `extra` (NULL for none) is a
 * block of "Name: value\r\n" lines added as they are (ws_headers.h). */
char *ws_handshake_request(const struct ws_url *url, const char *key, const char *extra, sbx_error_t *err);
/* Checks the response in buf[0..len).  Returns 1 when the header is complete
 * and valid (*header_len = its size including the blank line; the bytes after
 * it are already WebSocket frames), 0 when more bytes are needed, -1 when the
 * response is invalid or its header exceeds WS_MAX_RESPONSE_HEADER. */
int ws_handshake_check_response(const char *buf, size_t len, const char *key, size_t *header_len,
				sbx_error_t *err);

#endif
