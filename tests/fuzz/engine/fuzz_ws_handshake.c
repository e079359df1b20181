/* libFuzzer target: the handshake response check, the URL parser and the
 * operator's upgrade headers (III_HEADERS_FILE). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engine/ws_handshake.h"
#include "engine/ws_headers.h"
#include "engine/ws_url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t hlen = 0;
	sbx_error_t err = NULL;
	char *block = NULL;
	size_t nheaders = 0;
	if (ws_headers_parse((const char *)data, size, &block, &nheaders, &err) == 0) {
		/* Whatever the file held, the request keeps one header end, at its end. */
		struct ws_url hu;
		if (nheaders > WS_HEADERS_MAX_COUNT || ws_url_parse("ws://127.0.0.1:1/", &hu, &err) < 0)
			abort();
		char *req = ws_handshake_request(&hu, "dGhlIHNhbXBsZSBub25jZQ==", block, &err);
		if (req == NULL || strstr(req, "\r\n\r\n") != req + strlen(req) - 4)
			abort();
		free(req);
		ws_url_free(&hu);
		free(block);
	}
	sbx_error_free(&err);
	int r = ws_handshake_check_response((const char *)data, size, "dGhlIHNhbXBsZSBub25jZQ==", &hlen, &err);
	if (r == 1 && (hlen > size || hlen < 4))
		abort();
	sbx_error_free(&err);

	char *s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = '\0';
	struct ws_url u;
	if (ws_url_parse(s, &u, &err) == 0) {
		char *req = ws_handshake_request(&u, "dGhlIHNhbXBsZSBub25jZQ==", NULL, &err);
		/* Nothing in a parsed URL may break the request's lines. */
		if (req == NULL || strstr(req, "\r\n\r\n") != req + strlen(req) - 4)
			abort();
		free(req);
		ws_url_free(&u);
	}
	sbx_error_free(&err);
	free(s);
	return 0;
}
