#include "ws_test_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "engine/ws_handshake.h"

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int ts_start(struct test_server *s)
{
	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	if (s->listen_fd < 0 || bind(s->listen_fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(s->listen_fd, 4) < 0 || getsockname(s->listen_fd, (struct sockaddr *)&a, &al) < 0)
		return -1;
	s->port = ntohs(a.sin_port);
	snprintf(s->url, sizeof(s->url), "ws://127.0.0.1:%d", s->port);
	return 0;
}

static int wait_in(int fd, long long deadline)
{
	long long left = deadline - now_ms();
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, left > 0 ? (int)left : 0);
}

int ts_accept(struct test_server *s, int timeout_ms)
{
	long long deadline = now_ms() + timeout_ms;
	ts_drop(s);
	if (wait_in(s->listen_fd, deadline) <= 0)
		return -1;
	s->fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (s->fd < 0)
		return -1;
	char req[4096];
	size_t n = 0;
	while (n < sizeof(req) - 1 && (n < 4 || memcmp(req + n - 4, "\r\n\r\n", 4) != 0)) {
		if (wait_in(s->fd, deadline) <= 0)
			return -1;
		ssize_t r = read(s->fd, req + n, 1); /* byte by byte: frames may follow */
		if (r <= 0)
			return -1;
		n += (size_t)r;
	}
	req[n] = '\0';
	memcpy(s->request, req, n + 1);
	if (sscanf(req, "%511[^\r]", s->request_line) != 1)
		return -1;
	char *k = strcasestr(req, "\r\nSec-WebSocket-Key: ");
	if (k == NULL)
		return -1;
	char key[64];
	if (sscanf(k + 21, "%63[^\r]", key) != 1)
		return -1;
	char accept[WS_ACCEPT_LEN + 1];
	sbx_error_t err = NULL;
	if (ws_handshake_accept(key, accept, &err) < 0)
		return -1;
	char resp[256];
	int rl = snprintf(resp, sizeof(resp),
			  "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
			  "Sec-WebSocket-Accept: %s\r\n\r\n",
			  accept);
	if (write(s->fd, resp, (size_t)rl) != rl)
		return -1;
	ws_decoder_init(&s->dec, true, 0);
	s->len = 0;
	return 0;
}

int ts_send_frame(struct test_server *s, enum ws_opcode op, const void *data, size_t len)
{
	size_t n;
	sbx_error_t err = NULL;
	uint8_t *f = ws_frame_encode(op, true, data, len, NULL, &n, &err);
	if (f == NULL || s->fd < 0) {
		free(f);
		sbx_error_free(&err);
		return -1;
	}
	ssize_t w = send(s->fd, f, n, MSG_NOSIGNAL);
	free(f);
	return w == (ssize_t)n ? 0 : -1;
}

int ts_send_text(struct test_server *s, const char *text)
{
	return ts_send_frame(s, WS_OP_TEXT, text, strlen(text));
}

int ts_send_json(struct test_server *s, json_t *msg)
{
	char *text = json_dumps(msg, JSON_COMPACT);
	json_decref(msg);
	int r = text != NULL ? ts_send_text(s, text) : -1;
	free(text);
	return r;
}

int ts_recv_frame(struct test_server *s, int timeout_ms, enum ws_opcode *op, uint8_t **data, size_t *len)
{
	long long deadline = now_ms() + timeout_ms;
	if (s->fd < 0)
		return -1;
	for (;;) {
		struct ws_message m;
		size_t used = 0, need = 0;
		sbx_error_t err = NULL;
		int r = s->len > 0 ? ws_decoder_next(&s->dec, s->buf, s->len, &used, &need, &m, &err) : 0;
		sbx_error_free(&err);
		if (r < 0)
			return -1;
		if (r == 1) {
			bool keep = m.opcode != WS_OP_PING && m.opcode != WS_OP_PONG;
			if (keep) {
				*op = m.opcode;
				*len = m.len;
				*data = malloc(m.len + 1);
				if (*data == NULL)
					return -1;
				memcpy(*data, m.data, m.len);
			} else if (m.opcode == WS_OP_PING) {
				s->pings++, ts_send_frame(s, WS_OP_PONG, m.data, m.len);
			}
			memmove(s->buf, s->buf + used, s->len - used);
			s->len -= used;
			if (keep)
				return 1;
			continue;
		}
		if (used > 0) {
			memmove(s->buf, s->buf + used, s->len - used);
			s->len -= used;
		}
		if (s->cap - s->len < 65536) {
			s->cap = s->len + 65536 + need;
			s->buf = realloc(s->buf, s->cap);
		}
		int w = wait_in(s->fd, deadline);
		if (w == 0)
			return 0;
		if (w < 0)
			return -1;
		ssize_t n = read(s->fd, s->buf + s->len, s->cap - s->len);
		if (n <= 0)
			return -1;
		s->len += (size_t)n;
	}
}

json_t *ts_recv(struct test_server *s, int timeout_ms)
{
	long long deadline = now_ms() + timeout_ms;
	if (s->fd < 0)
		return NULL;
	for (;;) {
		struct ws_message m;
		size_t used = 0, need = 0;
		sbx_error_t err = NULL;
		int r = s->len > 0 ? ws_decoder_next(&s->dec, s->buf, s->len, &used, &need, &m, &err) : 0;
		sbx_error_free(&err);
		if (r < 0)
			return NULL;
		if (r == 1) {
			json_t *j = NULL;
			if (m.opcode == WS_OP_TEXT)
				j = json_loadb((const char *)m.data, m.len, JSON_ALLOW_NUL, NULL);
			else if (m.opcode == WS_OP_PING)
				s->pings++, ts_send_frame(s, WS_OP_PONG, m.data, m.len);
			bool closed = m.opcode == WS_OP_CLOSE;
			memmove(s->buf, s->buf + used, s->len - used);
			s->len -= used;
			if (j != NULL || closed)
				return j;
			continue;
		}
		if (used > 0) {
			memmove(s->buf, s->buf + used, s->len - used);
			s->len -= used;
		}
		if (s->cap - s->len < 65536) {
			s->cap = s->len + 65536 + need;
			s->buf = realloc(s->buf, s->cap);
		}
		if (wait_in(s->fd, deadline) <= 0)
			return NULL;
		ssize_t n = read(s->fd, s->buf + s->len, s->cap - s->len);
		if (n <= 0)
			return NULL;
		s->len += (size_t)n;
	}
}

void ts_drop(struct test_server *s)
{
	if (s->fd >= 0) {
		close(s->fd);
		s->fd = -1;
	}
	ws_decoder_free(&s->dec);
	s->len = 0;
}

void ts_stop(struct test_server *s)
{
	ts_drop(s);
	free(s->buf);
	s->buf = NULL;
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	s->listen_fd = -1;
}
