#include "engine/ws_conn.h"

#include <errno.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "engine/transport.h"
#include "engine/ws_handshake.h"
#include "engine/ws_url.h"

#define READ_CHUNK 16384
#define WS_CLOSE_TIMEOUT_MS 1000

struct ws_conn {
	struct transport *t;
	int cancel_fd;
	pthread_mutex_t send_lock;
	bool close_sent;         /* under send_lock */
	uint8_t *out;            /* queued frames (ws_conn_queue), under send_lock */
	size_t olen, ooff, ocap; /* queued bytes, of which sent; allocated */
	struct ws_decoder dec;
	uint8_t *rbuf;           /* received bytes not yet decoded */
	size_t rlen, rcap, rdrop; /* rdrop: bytes of the last message, dropped on the next call */
	_Atomic int64_t last_rx;
};

static int grow_rbuf(struct ws_conn *c, size_t want, sbx_error_t *err)
{
	if (want <= c->rcap)
		return 0;
	uint8_t *nb = realloc(c->rbuf, want);
	if (nb == NULL)
		return sbx_error_errno(err, ENOMEM, "WebSocket receive buffer of %zu bytes", want);
	c->rbuf = nb;
	c->rcap = want;
	return 0;
}

/* Reads whatever is available into rbuf (room for at least `room` bytes). */
static ssize_t read_some(struct ws_conn *c, size_t room, sbx_error_t *err)
{
	if (grow_rbuf(c, c->rlen + room, err) < 0)
		return -1;
	ssize_t n = transport_read(c->t, c->rbuf + c->rlen, c->rcap - c->rlen, err);
	if (n > 0) {
		c->rlen += (size_t)n;
		atomic_store(&c->last_rx, sbx_now_ms());
	}
	return n;
}

static int upgrade(struct ws_conn *c, const struct ws_url *url, const char *headers, int64_t deadline,
		   sbx_error_t *err)
{
	char key[WS_KEY_LEN + 1];
	if (ws_handshake_key(key, err) < 0)
		return -1;
	cleanup_free char *req = ws_handshake_request(url, key, headers, err);
	if (req == NULL)
		return -1;
	size_t req_len = strlen(req);
	int sent = transport_write_all(c->t, req, req_len, sbx_ms_left(deadline), c->cancel_fd, err);
	explicit_bzero(req, req_len); /* it may hold the operator's secrets */
	if (sent < 0)
		return -1;
	for (;;) {
		size_t hlen;
		int r = ws_handshake_check_response((const char *)c->rbuf, c->rlen, key, &hlen, err);
		if (r < 0)
			return -1;
		if (r == 1) {
			/* Whatever followed the header is already frames. */
			memmove(c->rbuf, c->rbuf + hlen, c->rlen - hlen);
			c->rlen -= hlen;
			return 0;
		}
		ssize_t n = read_some(c, READ_CHUNK, err);
		if (n < 0)
			return -1;
		if (n > 0)
			continue;
		int w = transport_wait_readable(c->t, sbx_ms_left(deadline), c->cancel_fd, err);
		if (w < 0)
			return -1;
		if (w == 0)
			return sbx_error_set(err, ETIMEDOUT, "WebSocket upgrade timed out");
	}
}

struct ws_conn *ws_conn_open(const char *url_text, const char *headers, int timeout_ms, int cancel_fd,
			     size_t max_message, sbx_error_t *err)
{
	int64_t deadline = sbx_now_ms() + timeout_ms;
	struct ws_url url;
	if (ws_url_parse(url_text, &url, err) < 0)
		return NULL;
	struct ws_conn *c = calloc(1, sizeof(*c));
	if (c == NULL) {
		ws_url_free(&url);
		sbx_error_errno(err, ENOMEM, "WebSocket connection");
		return NULL;
	}
	c->cancel_fd = cancel_fd;
	pthread_mutex_init(&c->send_lock, NULL);
	ws_decoder_init(&c->dec, false, max_message);
	atomic_store(&c->last_rx, sbx_now_ms());
	c->t = transport_connect(&url, timeout_ms, cancel_fd, err);
	if (c->t == NULL || upgrade(c, &url, headers, deadline, err) < 0) {
		ws_url_free(&url);
		ws_conn_free(c);
		return NULL;
	}
	ws_url_free(&url);
	return c;
}

static uint8_t *encode(enum ws_opcode op, const void *data, size_t len, size_t *flen, sbx_error_t *err)
{
	uint8_t mask[4];
	if (RAND_bytes(mask, sizeof(mask)) != 1)
		return sbx_error_set(err, EIO, "no random bytes for a WebSocket mask"), NULL;
	return ws_frame_encode(op, true, data, len, mask, flen, err);
}

/* Under send_lock: part of a frame may be on the wire, the stream is
 * unusable. */
static int broken_locked(struct ws_conn *c)
{
	c->close_sent = true;
	c->olen = c->ooff = 0;
	transport_shutdown(c->t);
	return -1;
}

/* Under send_lock: appends `frame` (a Close is the last) after what is
 * queued. */
static int queue_locked(struct ws_conn *c, const uint8_t *frame, size_t flen, bool is_close, sbx_error_t *err)
{
	if (c->close_sent)
		return sbx_error_set(err, EPIPE, "WebSocket already closed");
	if (c->olen - c->ooff > SIZE_MAX - flen)
		return sbx_error_errno(err, ENOMEM, "WebSocket send queue");
	/* What was sent goes; the rest moves to the front. */
	if (c->ooff > 0) {
		memmove(c->out, c->out + c->ooff, c->olen - c->ooff);
		c->olen -= c->ooff;
		c->ooff = 0;
	}
	if (c->olen + flen > c->ocap) {
		uint8_t *out = realloc(c->out, c->olen + flen);
		if (out == NULL)
			return sbx_error_errno(err, ENOMEM, "WebSocket send queue");
		c->out = out;
		c->ocap = c->olen + flen;
	}
	memcpy(c->out + c->olen, frame, flen);
	c->olen += flen;
	if (is_close)
		c->close_sent = true;
	return 0;
}

/* Queues the frame, then sends all that is queued within timeout_ms (0:
 * not at all). */
static int send_frame(struct ws_conn *c, enum ws_opcode op, const void *data, size_t len, int timeout_ms,
		      sbx_error_t *err)
{
	size_t flen;
	cleanup_free uint8_t *frame = encode(op, data, len, &flen, err);
	if (frame == NULL)
		return -1;
	pthread_mutex_lock(&c->send_lock);
	int r = queue_locked(c, frame, flen, op == WS_OP_CLOSE, err);
	if (r == 0 && timeout_ms > 0) {
		if (transport_write_all(c->t, c->out + c->ooff, c->olen - c->ooff, timeout_ms, c->cancel_fd, err) < 0)
			r = broken_locked(c);
		c->olen = c->ooff = 0;
	}
	pthread_mutex_unlock(&c->send_lock);
	return r;
}

int ws_conn_queue(struct ws_conn *c, enum ws_opcode op, const void *data, size_t len, sbx_error_t *err)
{
	return send_frame(c, op, data, len, 0, err);
}

int ws_conn_flush(struct ws_conn *c, short *events, sbx_error_t *err)
{
	*events = 0;
	pthread_mutex_lock(&c->send_lock);
	int r = 1;
	while (r == 1 && c->ooff < c->olen) {
		ssize_t n = transport_write_some(c->t, c->out + c->ooff, c->olen - c->ooff, events, err);
		if (n < 0)
			r = broken_locked(c);
		else if (n == 0)
			r = 0;
		else
			c->ooff += (size_t)n;
	}
	if (r == 1) {
		*events = 0;
		c->olen = c->ooff = 0;
	}
	pthread_mutex_unlock(&c->send_lock);
	return r;
}

int ws_conn_fd(const struct ws_conn *c)
{
	return transport_fd(c->t);
}

int ws_conn_send_text(struct ws_conn *c, const char *text, size_t len, sbx_error_t *err)
{
	return send_frame(c, WS_OP_TEXT, text, len, WS_SEND_TIMEOUT_MS, err);
}

int ws_conn_send_binary(struct ws_conn *c, const void *data, size_t len, sbx_error_t *err)
{
	return send_frame(c, WS_OP_BINARY, data, len, WS_SEND_TIMEOUT_MS, err);
}

int ws_conn_send_ping(struct ws_conn *c, sbx_error_t *err)
{
	return send_frame(c, WS_OP_PING, NULL, 0, WS_SEND_TIMEOUT_MS, err);
}

int ws_conn_send_close(struct ws_conn *c, uint16_t code, sbx_error_t *err)
{
	pthread_mutex_lock(&c->send_lock);
	bool done = c->close_sent;
	pthread_mutex_unlock(&c->send_lock);
	if (done)
		return 0;
	uint8_t payload[2] = { (uint8_t)(code >> 8), (uint8_t)code };
	/* Best effort: a peer that cannot take two bytes within this is gone. */
	return send_frame(c, WS_OP_CLOSE, payload, sizeof(payload), WS_CLOSE_TIMEOUT_MS, err);
}

/* Answers a control frame; returns 1 when it ends the receive (Close). */
static int handle_control(struct ws_conn *c, const struct ws_message *m, sbx_error_t *err)
{
	if (m->opcode == WS_OP_PING) {
		/* Behind queued frames, the answer is queued too: a loop that
		 * polls its connections never blocks on one. */
		pthread_mutex_lock(&c->send_lock);
		bool queued = c->ooff < c->olen;
		pthread_mutex_unlock(&c->send_lock);
		if (queued)
			return ws_conn_queue(c, WS_OP_PONG, m->data, m->len, err) < 0 ? -1 : 0;
		return send_frame(c, WS_OP_PONG, m->data, m->len, WS_SEND_TIMEOUT_MS, err) < 0 ? -1 : 0;
	}
	if (m->opcode == WS_OP_PONG)
		return 0;
	/* Close: echo the peer's status code, as RFC 6455 asks. */
	uint16_t code = m->len >= 2 ? (uint16_t)((m->data[0] << 8) | m->data[1]) : 1000;
	sbx_error_t ignored = NULL;
	ws_conn_send_close(c, code, &ignored);
	sbx_error_free(&ignored);
	return 1;
}

int ws_conn_recv(struct ws_conn *c, struct ws_message *msg, int timeout_ms, sbx_error_t *err)
{
	int64_t deadline = sbx_now_ms() + timeout_ms;
	bool read_once = false;
	for (;;) {
		if (c->rdrop > 0) {
			memmove(c->rbuf, c->rbuf + c->rdrop, c->rlen - c->rdrop);
			c->rlen -= c->rdrop;
			c->rdrop = 0;
		}
		size_t consumed = 0, need = WS_MAX_HEADER;
		int r = 0;
		if (c->rlen > 0)
			r = ws_decoder_next(&c->dec, c->rbuf, c->rlen, &consumed, &need, msg, err);
		if (r < 0) {
			sbx_error_t ignored = NULL;
			ws_conn_send_close(c, (*err)->errnum == EMSGSIZE ? 1009 : 1002, &ignored);
			sbx_error_free(&ignored);
			return -1;
		}
		c->rdrop = consumed;
		if (r == 1) {
			if (msg->opcode == WS_OP_TEXT || msg->opcode == WS_OP_BINARY)
				return 1;
			int h = handle_control(c, msg, err);
			if (h != 0)
				return h;
			continue;
		}

		/* Room for the rest of the pending frame, read in chunks. */
		size_t have = c->rlen - consumed;
		size_t room = need > have ? need - have : 0;
		if (room < READ_CHUNK)
			room = READ_CHUNK;
		if (c->rdrop > 0) {
			memmove(c->rbuf, c->rbuf + c->rdrop, c->rlen - c->rdrop);
			c->rlen -= c->rdrop;
			c->rdrop = 0;
		}
		/* A peer dripping bytes must not keep the caller from its timers;
		 * what one read brought is decoded first (a timeout of 0 reads
		 * what is there). */
		if (read_once && sbx_now_ms() >= deadline)
			return 0;
		ssize_t n = read_some(c, room, err);
		if (n < 0)
			return -1;
		if (n > 0) {
			read_once = true;
			continue;
		}
		int w = transport_wait_readable(c->t, sbx_ms_left(deadline), c->cancel_fd, err);
		if (w < 0)
			return -1;
		if (w == 0)
			return 0;
	}
}

int64_t ws_conn_last_rx_ms(struct ws_conn *c)
{
	return atomic_load(&c->last_rx);
}

void ws_conn_shutdown(struct ws_conn *c)
{
	transport_shutdown(c->t);
}

void ws_conn_free(struct ws_conn *c)
{
	if (c == NULL)
		return;
	transport_free(c->t);
	ws_decoder_free(&c->dec);
	free(c->rbuf);
	free(c->out);
	pthread_mutex_destroy(&c->send_lock);
	free(c);
}
