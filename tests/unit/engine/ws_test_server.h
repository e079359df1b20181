/* A tiny single-client WebSocket server on a loopback port, driven step by
 * step by a test: accept, send a JSON message, receive the next one. */
#ifndef SBX_TEST_WS_SERVER_H
#define SBX_TEST_WS_SERVER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/ws_frame.h"

struct test_server {
	int listen_fd;
	int port;
	int fd; /* the accepted client, or -1 */
	struct ws_decoder dec;
	uint8_t *buf;
	size_t len, cap;
	int pings; /* WebSocket pings received (answered automatically) */
	char url[64];
	char request_line[512]; /* of the last accepted upgrade */
	char request[4096];     /* its whole header */
};

int ts_start(struct test_server *s);
/* Accepts one client and completes its upgrade; -1 on timeout. */
int ts_accept(struct test_server *s, int timeout_ms);
int ts_send_text(struct test_server *s, const char *text);
int ts_send_json(struct test_server *s, json_t *msg); /* steals msg */
int ts_send_frame(struct test_server *s, enum ws_opcode op, const void *data, size_t len);
/* The next text message, parsed; NULL on timeout, close or garbage. */
json_t *ts_recv(struct test_server *s, int timeout_ms);
/* The next data or Close message, raw: 1 with *op and a copy in *data
 * (free it), 0 on timeout, -1 on a closed or broken connection. */
int ts_recv_frame(struct test_server *s, int timeout_ms, enum ws_opcode *op, uint8_t **data, size_t *len);
/* Closes the client connection without a Close frame. */
void ts_drop(struct test_server *s);
void ts_stop(struct test_server *s);

#endif
