/* Extra headers of the WebSocket upgrade request, from the file an operator
 * names in III_HEADERS_FILE: an engine with `rbac.auth_function_id` hands
 * them to its auth function (iii-protocol.md §1.2).  The values are secrets:
 * no message here or in a caller ever shows one. */
#ifndef SBX_ENGINE_WS_HEADERS_H
#define SBX_ENGINE_WS_HEADERS_H

#include <stddef.h>

#include "common/error.h"

#define WS_HEADERS_ENV "III_HEADERS_FILE"
#define WS_HEADERS_MAX_COUNT 32
#define WS_HEADERS_MAX_FILE (8 * 1024)

/* Parses text[0..len): `Name: value` lines, blank lines and lines starting
 * with '#'.  A name is an HTTP token and not one the handshake sets itself
 * (Host, Upgrade, Connection, Sec-WebSocket-*, Content-Length,
 * Transfer-Encoding); a value has no control character but tab, and loses
 * its surrounding blanks.  *block is a new string of "Name: value\r\n"
 * lines ("" for none).  An error names the line and why, never a value. */
int ws_headers_parse(const char *text, size_t len, char **block, size_t *count, sbx_error_t *err);

/* Reads and parses `path`: a regular file of at most WS_HEADERS_MAX_FILE
 * bytes that neither group nor others may read. */
int ws_headers_load(const char *path, char **block, size_t *count, sbx_error_t *err);

/* ws_headers_load() of III_HEADERS_FILE; *block NULL and *count 0 when it
 * is unset or empty. */
int ws_headers_from_env(char **block, size_t *count, sbx_error_t *err);

#endif
