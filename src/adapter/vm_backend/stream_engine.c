/* The byte-channel port with the engine client: each end a WebSocket of
 * its own (engine_channel_io.c).  A writer send blocks while the engine's
 * buffer is full and fails after WS_SEND_TIMEOUT_MS (60 s), or at once
 * when another thread aborts it. */
#include "adapter/vm_backend/stream_engine.h"

#include <errno.h>
#include <string.h>

#include "common/log.h"
#include "common/scodes.h"
#include "engine/engine_channel.h"

/* The caller's ref, checked for the direction this end needs: S001
 * otherwise, its message naming the ref's field (the request logic puts
 * the request field in front). */
static int parse_ref(json_t *j, const char *want, struct channel_ref *ref, sbx_error_t *err)
{
	if (channel_ref_parse(j, ref, err) < 0) {
		sbx_error_default_scode(err, SBX_S_INVALID_REQUEST);
		return -1;
	}
	if (strcmp(ref->direction, want) != 0) {
		channel_ref_free(ref);
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST,
				       "channel ref: `direction` must be \"%s\" (a %s ref)", want,
				       want[0] == 'w' ? "writer" : "reader");
	}
	return 0;
}

static void *writer_open(void *ctx, json_t *ref_json, sbx_error_t *err)
{
	struct channel_ref ref;
	if (parse_ref(ref_json, "write", &ref, err) < 0)
		return NULL;
	struct channel_writer *w = channel_writer_open(ctx, &ref, err);
	channel_ref_free(&ref);
	if (w == NULL)
		sbx_error_default_scode(err, SBX_S_FS_CHANNEL);
	return w;
}

static int writer_send(void *w, const void *data, size_t len, sbx_error_t *err)
{
	if (channel_writer_send(w, data, len, err) < 0) {
		sbx_error_default_scode(err, SBX_S_FS_CHANNEL);
		return -1;
	}
	return 0;
}

static void writer_close(void *w, const char *fail_text)
{
	sbx_error_t err = NULL;
	if (fail_text != NULL && channel_writer_fail(w, fail_text, &err) < 0) {
		sbx_debug("channel: error frame: %s", sbx_error_msg(err));
		sbx_error_free(&err);
	}
	if (channel_writer_close(w, &err) < 0) {
		sbx_debug("channel: close: %s", sbx_error_msg(err));
		sbx_error_free(&err);
	}
	channel_writer_free(w);
}

static void writer_abort(void *w)
{
	channel_writer_abort(w);
}

static int writer_fd(void *w)
{
	return channel_writer_fd(w);
}

static int writer_queue(void *w, const void *data, size_t len, const char *fail_text, sbx_error_t *err)
{
	int rc = data != NULL ? channel_writer_queue(w, data, len, err) : channel_writer_queue_end(w, fail_text, err);
	if (rc < 0)
		sbx_error_default_scode(err, SBX_S_FS_CHANNEL);
	return rc;
}

static int writer_flush(void *w, short *events, sbx_error_t *err)
{
	int rc = channel_writer_flush(w, events, err);
	if (rc < 0)
		sbx_error_default_scode(err, SBX_S_FS_CHANNEL);
	return rc;
}

static bool writer_gone(void *w)
{
	return channel_writer_gone(w);
}

static void writer_free(void *w)
{
	channel_writer_free(w);
}

static void *reader_open(void *ctx, json_t *ref_json, int idle_ms, sbx_error_t *err)
{
	struct channel_ref ref;
	if (parse_ref(ref_json, "read", &ref, err) < 0)
		return NULL;
	struct channel_reader *r = channel_reader_open(ctx, &ref, idle_ms, err);
	channel_ref_free(&ref);
	return r;
}

static ssize_t reader_next(void *r, const uint8_t **data, sbx_error_t *err)
{
	return channel_reader_next(r, data, err);
}

static void reader_abort(void *r)
{
	channel_reader_abort(r);
}

static void reader_close(void *r)
{
	channel_reader_free(r);
}

static int create(void *ctx, json_t **writer, json_t **reader, sbx_error_t *err)
{
	struct channel_ref w, r;
	*writer = *reader = NULL;
	if (channel_create(ctx, NULL, CHANNEL_DEFAULT_BUFFER, &w, &r, err) < 0) {
		sbx_error_default_scode(err, SBX_S_FS_CHANNEL);
		return -1;
	}
	*writer = channel_ref_json(&w);
	*reader = channel_ref_json(&r);
	channel_ref_free(&w);
	channel_ref_free(&r);
	if (*writer == NULL || *reader == NULL) {
		json_decref(*writer);
		json_decref(*reader);
		*writer = *reader = NULL;
		return sbx_error_errno(err, ENOMEM, "channel refs");
	}
	return 0;
}

const struct sbx_stream_ops stream_engine_ops = {
	.writer_open = writer_open,
	.writer_send = writer_send,
	.writer_close = writer_close,
	.writer_abort = writer_abort,
	.writer_fd = writer_fd,
	.writer_queue = writer_queue,
	.writer_flush = writer_flush,
	.writer_gone = writer_gone,
	.writer_free = writer_free,
	.reader_open = reader_open,
	.reader_next = reader_next,
	.reader_abort = reader_abort,
	.reader_close = reader_close,
	.create = create,
};
