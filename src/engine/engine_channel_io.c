/* The two ends of an engine byte channel, each a WebSocket of its own. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/scodes.h"
#include "engine/engine_channel.h"
#include "common/clock.h"
#include "engine/engine_internal.h"
#include "engine/transport.h"
#include "engine/ws_url.h"

#define CLOSE_WAIT_MS 2000 /* for the engine's answer to our Close */
#define IDLE_SLICE_MS 1000 /* one wait of a reader without an idle limit */

struct channel_writer {
	struct ws_conn *c;
};

struct channel_reader {
	struct ws_conn *c;
	int idle_ms; /* -1: no idle limit */
	bool ended;
};

static struct ws_conn *open_end(struct engine *e, const struct channel_ref *ref, const char *dir, sbx_error_t *err)
{
	cleanup_free char *url = ws_url_channel(e->url, ref->channel_id, ref->access_key, dir, err);
	if (url == NULL)
		return NULL;
	struct ws_conn *c = ws_conn_open(url, NULL, TRANSPORT_CONNECT_TIMEOUT_MS, e->stop_fd, CHANNEL_IN_FRAME_MAX, err);
	if (c == NULL)
		sbx_error_prefix(err, "opening the %s end of channel %s", dir, ref->channel_id);
	return c;
}

struct channel_writer *channel_writer_open(struct engine *e, const struct channel_ref *ref, sbx_error_t *err)
{
	struct channel_writer *w = calloc(1, sizeof(*w));
	if (w == NULL) {
		sbx_error_errno(err, ENOMEM, "channel writer");
		return NULL;
	}
	w->c = open_end(e, ref, "write", err);
	if (w->c == NULL) {
		free(w);
		return NULL;
	}
	return w;
}

int channel_writer_send(struct channel_writer *w, const void *data, size_t len, sbx_error_t *err)
{
	const uint8_t *p = data;
	while (len > 0) {
		size_t n = len < CHANNEL_FRAME_MAX ? len : CHANNEL_FRAME_MAX;
		if (ws_conn_send_binary(w->c, p, n, err) < 0)
			return sbx_error_prefix(err, "write to channel failed");
		p += n;
		len -= n;
	}
	return 0;
}

/* The text of the error frame {"error": text} (malloc'd). */
static char *error_frame(const char *text, sbx_error_t *err)
{
	json_t *j = json_pack("{s:s}", "error", text);
	char *s = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (s == NULL)
		sbx_error_errno(err, ENOMEM, "channel error frame");
	return s;
}

int channel_writer_fail(struct channel_writer *w, const char *text, sbx_error_t *err)
{
	cleanup_free char *s = error_frame(text, err);
	return s != NULL ? ws_conn_send_text(w->c, s, strlen(s), err) : -1;
}

int channel_writer_close(struct channel_writer *w, sbx_error_t *err)
{
	if (ws_conn_send_close(w->c, 1000, err) < 0)
		return -1;
	/* The engine answers our Close once it has taken every frame before
	 * it; anything else it sends the writer is of no interest. */
	int64_t deadline = sbx_now_ms() + CLOSE_WAIT_MS;
	for (;;) {
		struct ws_message m;
		sbx_error_t ignored = NULL;
		int r = ws_conn_recv(w->c, &m, sbx_ms_left(deadline), &ignored);
		sbx_error_free(&ignored);
		if (r <= 0 || m.opcode == WS_OP_CLOSE)
			return 0;
	}
}

int channel_writer_queue(struct channel_writer *w, const void *data, size_t len, sbx_error_t *err)
{
	return ws_conn_queue(w->c, WS_OP_BINARY, data, len, err);
}

int channel_writer_queue_end(struct channel_writer *w, const char *fail_text, sbx_error_t *err)
{
	if (fail_text != NULL) {
		cleanup_free char *s = error_frame(fail_text, err);
		if (s == NULL || ws_conn_queue(w->c, WS_OP_TEXT, s, strlen(s), err) < 0)
			return -1;
	}
	uint8_t normal[2] = { 1000 >> 8, 1000 & 0xff };
	return ws_conn_queue(w->c, WS_OP_CLOSE, normal, sizeof(normal), err);
}

int channel_writer_flush(struct channel_writer *w, short *events, sbx_error_t *err)
{
	return ws_conn_flush(w->c, events, err);
}

int channel_writer_fd(const struct channel_writer *w)
{
	return ws_conn_fd(w->c);
}

bool channel_writer_gone(struct channel_writer *w)
{
	for (;;) {
		struct ws_message m;
		sbx_error_t ignored = NULL;
		int r = ws_conn_recv(w->c, &m, 0, &ignored);
		sbx_error_free(&ignored);
		if (r < 0 || (r == 1 && m.opcode == WS_OP_CLOSE))
			return true;
		if (r == 0)
			return false;
	}
}

void channel_writer_abort(struct channel_writer *w)
{
	ws_conn_shutdown(w->c);
}

void channel_writer_free(struct channel_writer *w)
{
	if (w == NULL)
		return;
	ws_conn_free(w->c);
	free(w);
}

struct channel_reader *channel_reader_open(struct engine *e, const struct channel_ref *ref, int idle_ms,
					   sbx_error_t *err)
{
	struct channel_reader *r = calloc(1, sizeof(*r));
	if (r == NULL) {
		sbx_error_errno(err, ENOMEM, "channel reader");
		return NULL;
	}
	r->idle_ms = idle_ms > 0 ? idle_ms : idle_ms < 0 ? -1 : CHANNEL_IDLE_MS;
	/* The caller hands us a ref to read from, whatever its direction says. */
	r->c = open_end(e, ref, "read", err);
	if (r->c == NULL) {
		sbx_error_default_scode(err, SBX_S_FS_CHANNEL);
		free(r);
		return NULL;
	}
	return r;
}

/* The text of an {"error": "..."} frame, or NULL for any other text. */
static char *error_frame_text(const struct ws_message *m)
{
	json_t *j = json_loadb((const char *)m->data, m->len, JSON_ALLOW_NUL, NULL);
	const char *s = json_string_value(json_object_get(j, "error"));
	char *copy = s != NULL ? strndup(s, 1024) : NULL;
	json_decref(j);
	return copy;
}

ssize_t channel_reader_next(struct channel_reader *r, const uint8_t **data, sbx_error_t *err)
{
	if (r->ended)
		return 0;
	for (;;) {
		struct ws_message m;
		/* Without an idle limit, a quiet channel is waited on slice after
		 * slice for as long as it stays open (a stop still ends the wait
		 * at once: the cancel fd). */
		int got = ws_conn_recv(r->c, &m, r->idle_ms < 0 ? IDLE_SLICE_MS : r->idle_ms, err);
		if (got < 0) {
			sbx_error_prefix(err, "channel connection lost");
			sbx_error_default_scode(err, SBX_S_FS_CHANNEL);
			return -1;
		}
		if (got == 0 && r->idle_ms < 0)
			continue;
		if (got == 0)
			return sbx_error_scode(err, SBX_S_FS_CHANNEL, "no data on the channel for %d s", r->idle_ms / 1000);
		if (m.opcode == WS_OP_BINARY) {
			if (m.len == 0)
				continue;
			*data = m.data;
			return (ssize_t)m.len;
		}
		if (m.opcode == WS_OP_TEXT) {
			cleanup_free char *text = error_frame_text(&m);
			if (text != NULL)
				return sbx_error_scode(err, SBX_S_FS_CHANNEL, "the writer failed: %s", text);
			continue;
		}
		/* Close: 1000 or no status is the normal end. */
		uint16_t code = m.len >= 2 ? (uint16_t)((m.data[0] << 8) | m.data[1]) : 1000;
		if (code != 1000)
			return sbx_error_scode(err, SBX_S_FS_CHANNEL, "the channel closed with status %u before the end",
					       (unsigned)code);
		r->ended = true;
		return 0;
	}
}

void channel_reader_abort(struct channel_reader *r)
{
	ws_conn_shutdown(r->c);
}

void channel_reader_free(struct channel_reader *r)
{
	if (r == NULL)
		return;
	ws_conn_free(r->c);
	free(r);
}
