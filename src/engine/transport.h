/* A byte stream to the engine: TCP, optionally wrapped in TLS.  The socket is
 * non-blocking; every wait polls `cancel_fd` too, so a stop request ends any
 * connect, read or write at once.  One reader thread and any number of
 * writer threads may use a transport together (TLS calls are serialized). */
#ifndef SBX_ENGINE_TRANSPORT_H
#define SBX_ENGINE_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/error.h"
#include "engine/ws_url.h"

#define TRANSPORT_CONNECT_TIMEOUT_MS 10000

struct transport;

/* Resolves and connects to url's host and port (and does the TLS handshake
 * for wss://) within timeout_ms.  cancel_fd may be -1. */
struct transport *transport_connect(const struct ws_url *url, int timeout_ms, int cancel_fd, sbx_error_t *err);
/* Reads what is available: >0 bytes, 0 nothing yet (poll again), -1 on error
 * or end of stream (err says which). */
ssize_t transport_read(struct transport *t, void *buf, size_t len, sbx_error_t *err);
/* Waits up to timeout_ms until transport_read() may make progress: 1 ready,
 * 0 timeout, -1 cancelled or failed. */
int transport_wait_readable(struct transport *t, int timeout_ms, int cancel_fd, sbx_error_t *err);
/* Writes all of buf within timeout_ms. */
int transport_write_all(struct transport *t, const void *buf, size_t len, int timeout_ms, int cancel_fd,
			sbx_error_t *err);
/* Writes what the socket takes now: >0 bytes, 0 none (poll the fd for
 * *events, then call again with the same bytes), -1 on error. */
ssize_t transport_write_some(struct transport *t, const void *buf, size_t len, short *events, sbx_error_t *err);
/* The socket, for a caller's own poll. */
int transport_fd(const struct transport *t);
/* Makes blocked and future reads and writes fail; callable from any thread. */
void transport_shutdown(struct transport *t);
void transport_free(struct transport *t);

#endif
