/* ws:// and wss:// URLs, split into what the transport and the handshake
 * need. */
#ifndef SBX_ENGINE_WS_URL_H
#define SBX_ENGINE_WS_URL_H

#include <stdbool.h>

#include "common/error.h"

#define WS_URL_MAX 2048

struct ws_url {
	bool tls;
	char *host;   /* without brackets for IPv6 literals */
	int port;     /* 80 / 443 when absent */
	char *path;   /* "/" when absent; includes the query */
	char *authority; /* the Host header value: host, [v6], ":port" if not default */
};

/* Rejects user info, fragments, empty hosts, bad ports and any byte that
 * could break the request line (control characters, spaces). */
int ws_url_parse(const char *s, struct ws_url *out, sbx_error_t *err);
void ws_url_free(struct ws_url *u);
/* The URL of one end of an engine byte channel on the engine's host:
 * <ws|wss>://<authority>/ws/channels/<id>?key=<key>&dir=<read|write>, with
 * id and key percent-encoded.  A new string. */
char *ws_url_channel(const char *engine_url, const char *channel_id, const char *access_key, const char *dir,
		     sbx_error_t *err);

#endif
