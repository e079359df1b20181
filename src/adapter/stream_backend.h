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
#include <stdbool.h>
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
	/* Without blocking, for one loop serving many writers (process::logs
	 * follows), all five or none: the descriptor to poll (POLLIN: the
	 * engine sent something, its Close once the reader left); queue one
	 * frame of 1..64 KiB, or with data NULL the end (an error frame of
	 * fail_text when not NULL, then the Close); flush what is queued (1 all
	 * went, 0 some is left: poll for *events, -1 failed); whether the engine
	 * closed the channel (its reader left or it answered our Close) or the
	 * connection ended, read without waiting; free w without a Close. */
	int (*writer_fd)(void *w);
	int (*writer_queue)(void *w, const void *data, size_t len, const char *fail_text, sbx_error_t *err);
	int (*writer_flush)(void *w, short *events, sbx_error_t *err);
	bool (*writer_gone)(void *w);
	void (*writer_free)(void *w);
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
