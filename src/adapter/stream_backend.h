/* The engine's byte channels as requests use them beyond fs:: (a streamed
 * exec's output, a process log followed, a terminal's keys and screen), as
 * a small table of functions, so the request logic stays free of the
 * engine client: vm_backend/stream_engine.c implements it with
 * engine/engine_channel.h, unit tests with a fake; an adapter without one
 * answers S300.  Refs are StreamChannelRef objects ({channel_id,
 * access_key, direction}). */
#ifndef SBX_ADAPTER_STREAM_BACKEND_H
#define SBX_ADAPTER_STREAM_BACKEND_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"

struct sbx_stream_ops {
	/* The write end a caller's ref names (S001 for a ref that is not a
	 * writer ref or is malformed, S218 when the engine refuses it). */
	void *(*writer_open)(void *ctx, json_t *ref, sbx_error_t *err);
	/* One binary frame of 1..64 KiB; blocks while the engine's buffer is
	 * full (the reader is slow: backpressure), fails once it gave up. */
	int (*writer_send)(void *w, const void *data, size_t len, sbx_error_t *err);
	/* Ends the stream and frees w: a normal Close, or with fail_text
	 * first an error frame {"error": fail_text} (the fs::read convention). */
	void (*writer_close)(void *w, const char *fail_text);
	/* From any thread (optional): a writer_send blocked meanwhile, and
	 * every later one, fails at once; the reader sees the stream aborted.
	 * w must still be closed. */
	void (*writer_abort)(void *w);
	/* The read end a ref names (S001 for a ref that is not a reader ref
	 * or is malformed, S218 when the engine refuses it); idle_ms 0 = the
	 * channel default, -1 = never stalled (a terminal's keys may pause
	 * for hours). */
	void *(*reader_open)(void *ctx, json_t *ref, int idle_ms, sbx_error_t *err);
	/* The next chunk (valid until the next call): >0, 0 at the normal end,
	 * -1 (S218) when the stream aborted or the engine client stops. */
	ssize_t (*reader_next)(void *r, const uint8_t **data, sbx_error_t *err);
	/* From any thread (optional): a reader_next blocked meanwhile returns
	 * -1.  r must still be closed. */
	void (*reader_abort)(void *r);
	void (*reader_close)(void *r);
	/* engine::channels::create: both ends as refs (new references). */
	int (*create)(void *ctx, json_t **writer, json_t **reader, sbx_error_t *err);
};

struct sbx_stream_host {
	const struct sbx_stream_ops *ops; /* NULL: S300 */
	void *ctx;
};

#endif
