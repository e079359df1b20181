/* Engine byte channels (iii-protocol.md §7): create one, stream bytes into
 * its write end, or read the bytes a caller streams into a channel whose
 * reader ref came in a request.  Each end is its own WebSocket to the
 * engine's host (ws_url_channel()).
 *
 * End of stream on the read side: the engine closes the reader once the
 * writer is done, and it cannot tell a finished writer from one that
 * vanished.  So a stream counts as aborted when the writer said so with a
 * text frame {"error": "..."} (the convention of fs::read's pump), when the
 * reader's socket drops without a Close or closes with a status other than
 * 1000 (normal) or none, or when no frame arrives for the idle timeout (if
 * the reader has one).  All
 * of these fail with S218 "channel ..." details. */
#ifndef SBX_ENGINE_ENGINE_CHANNEL_H
#define SBX_ENGINE_ENGINE_CHANNEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "engine/engine.h"

#define CHANNEL_FRAME_MAX (64u * 1024u)       /* bytes per binary frame we send */
#define CHANNEL_IN_FRAME_MAX (1024u * 1024u)  /* largest frame we accept */
#define CHANNEL_IDLE_MS 30000                 /* reader: no frame this long = stalled */
#define CHANNEL_DEFAULT_BUFFER 64             /* frames the engine buffers */
#define CHANNEL_ID_MAX 256                    /* channel_id / access_key length cap */

struct channel_ref {
	char *channel_id;
	char *access_key;
	char direction[6]; /* "read" or "write" */
};

/* Parses a StreamChannelRef {channel_id, access_key, direction}: strings of
 * 1..CHANNEL_ID_MAX bytes, direction "read" or "write". */
int channel_ref_parse(json_t *obj, struct channel_ref *ref, sbx_error_t *err);
/* The ref as JSON (a new reference), NULL without memory. */
json_t *channel_ref_json(const struct channel_ref *ref);
void channel_ref_free(struct channel_ref *ref);

/* engine::channels::create {buffer_size}: fills both ends' refs. */
int channel_create(struct engine *e, const struct engine_invocation *parent, int buffer_size,
		   struct channel_ref *writer, struct channel_ref *reader, sbx_error_t *err);

/* The write end: binary frames of at most CHANNEL_FRAME_MAX bytes, then a
 * Close.  A send blocks while the engine's buffer is full (the reader is
 * slow or absent) and fails after WS_SEND_TIMEOUT_MS. */
struct channel_writer;
struct channel_writer *channel_writer_open(struct engine *e, const struct channel_ref *ref, sbx_error_t *err);
int channel_writer_send(struct channel_writer *w, const void *data, size_t len, sbx_error_t *err);
/* Tells the reader the stream failed: one text frame {"error": text}. */
int channel_writer_fail(struct channel_writer *w, const char *text, sbx_error_t *err);
/* Sends the Close and waits briefly for the engine's answer. */
int channel_writer_close(struct channel_writer *w, sbx_error_t *err);
/* The same without blocking, for a loop serving many writers from one
 * thread (polling channel_writer_fd): queue one binary frame, or the end
 * (the error frame of fail_text when not NULL, then the Close); flush
 * sends what the socket takes (1 all went, 0 some is left: poll for
 * *events, -1 failed).  channel_writer_gone reads what the engine sent
 * without waiting: true once it closed the channel (its reader left, or
 * it answered our Close) or the connection ended.  Free with
 * channel_writer_free. */
int channel_writer_queue(struct channel_writer *w, const void *data, size_t len, sbx_error_t *err);
int channel_writer_queue_end(struct channel_writer *w, const char *fail_text, sbx_error_t *err);
int channel_writer_flush(struct channel_writer *w, short *events, sbx_error_t *err);
int channel_writer_fd(const struct channel_writer *w);
bool channel_writer_gone(struct channel_writer *w);
/* From any thread: a send blocked meanwhile (the reader does not read)
 * fails at once; the reader sees the stream aborted.  Free it as usual. */
void channel_writer_abort(struct channel_writer *w);
void channel_writer_free(struct channel_writer *w);

/* The read end.  idle_ms 0 means CHANNEL_IDLE_MS; -1 (any negative value)
 * means no idle limit: only the writer, the engine or a stop ends the wait
 * (a terminal's keys may pause for hours). */
struct channel_reader;
struct channel_reader *channel_reader_open(struct engine *e, const struct channel_ref *ref, int idle_ms,
					   sbx_error_t *err);
/* The next chunk of bytes: >0 with *data (valid until the next call), 0 at
 * the normal end, -1 (S218) when the stream aborted, stalled or the engine
 * client is stopping.  Text frames other than the error frame are
 * skipped. */
ssize_t channel_reader_next(struct channel_reader *r, const uint8_t **data, sbx_error_t *err);
/* From any thread: a channel_reader_next() blocked meanwhile returns -1. */
void channel_reader_abort(struct channel_reader *r);
void channel_reader_free(struct channel_reader *r);

#endif
