/* A connected WebSocket client: the engine's main socket, and the byte
 * channels (/ws/channels/<id>?key=..&dir=read|write).  Any thread may send
 * (one mutex keeps frames whole); one thread receives.  Every wait also
 * watches `cancel_fd` (-1 for none), so a stop request ends it at once. */
#ifndef SBX_ENGINE_WS_CONN_H
#define SBX_ENGINE_WS_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "engine/ws_frame.h"

#define WS_SEND_TIMEOUT_MS 60000

struct ws_conn;

/* Connects, upgrades and returns an open connection; timeout_ms bounds the
 * TCP connect, TLS and the HTTP upgrade together.  `headers` (NULL for none)
 * are extra "Name: value\r\n" lines of the upgrade request (ws_headers.h).
 * max_message 0 means WS_DEFAULT_MAX_MESSAGE. */
struct ws_conn *ws_conn_open(const char *url, const char *headers, int timeout_ms, int cancel_fd,
			     size_t max_message, sbx_error_t *err);

int ws_conn_send_text(struct ws_conn *c, const char *text, size_t len, sbx_error_t *err);
int ws_conn_send_binary(struct ws_conn *c, const void *data, size_t len, sbx_error_t *err);
int ws_conn_send_ping(struct ws_conn *c, sbx_error_t *err);
/* Sends a Close frame with `code` (1000 = normal) once; later calls do
 * nothing. */
int ws_conn_send_close(struct ws_conn *c, uint16_t code, sbx_error_t *err);

/* Without blocking, for a caller that polls ws_conn_fd itself (a loop
 * serving many connections): ws_conn_queue adds one frame after those
 * queued (a Close is the last), ws_conn_flush sends what the socket takes:
 * 1 all went, 0 some is left (poll for *events and call again), -1 the
 * connection failed.  A blocking send sends what is queued first. */
int ws_conn_queue(struct ws_conn *c, enum ws_opcode op, const void *data, size_t len, sbx_error_t *err);
int ws_conn_flush(struct ws_conn *c, short *events, sbx_error_t *err);
int ws_conn_fd(const struct ws_conn *c);

/* Waits up to timeout_ms for a whole message.  Returns 1 with *msg (TEXT,
 * BINARY, or CLOSE when the peer closed: a Close is answered), 0 on timeout,
 * -1 on error or cancellation.  Pings are answered here and pongs swallowed.
 * msg->data stays valid until the next ws_conn_recv(). */
int ws_conn_recv(struct ws_conn *c, struct ws_message *msg, int timeout_ms, sbx_error_t *err);

/* Monotonic time (ms) of the last frame of any kind received. */
int64_t ws_conn_last_rx_ms(struct ws_conn *c);
/* Makes every blocked or future send and receive fail; any thread. */
void ws_conn_shutdown(struct ws_conn *c);
void ws_conn_free(struct ws_conn *c);

#endif
