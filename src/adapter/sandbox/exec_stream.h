/* A streamed exec's output (the request's optional `stream` field,
 * {stdout?: ref, stderr?: ref} of writer refs): each piece the guest
 * produces goes to its channel as one binary frame as it comes, nothing of
 * a streamed stream is kept for the reply, and each channel is closed when
 * the exec ends.  A send that fails (the reader went away, the engine gave
 * up) stops that stream's sending: the rest of it is discarded while the
 * command runs on.  A send blocked by a reader that does not read would
 * hold the exec past its deadline or a stop: a watch thread aborts it
 * then, so the exec ends on time. */
#ifndef SBX_ADAPTER_SANDBOX_EXEC_STREAM_H
#define SBX_ADAPTER_SANDBOX_EXEC_STREAM_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapter/stream_backend.h"
#include "common/error.h"

/* What the exec's caller may also see of the output (the operator's live
 * exec); see struct sbx_exec_request's on_output. */
typedef int (*exec_output_fn)(void *ud, int fd, const void *data, size_t len);

struct exec_stream {
	const struct sbx_stream_ops *ops;
	void *w[2];     /* stdout, stderr writers; NULL: not streamed */
	bool failed[2]; /* a send failed: that stream is discarded */
	atomic_bool sending[2]; /* a send is under way (the watch may abort it) */
	exec_output_fn inner;
	void *inner_ud;
	/* The watch (exec_stream_watch) */
	bool watching, done;
	pthread_t watch;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int64_t deadline; /* sbx_now_ms() time */
	bool (*cancelled)(void *ud);
	void *cancel_ud;
};

/* The request's `stream` (borrowed; NULL when absent or null): S001 unless
 * an object whose `stdout` and `stderr`, when present, are objects. */
int exec_stream_decode(json_t *req, json_t **stream, sbx_error_t *err);

/* Opens the writers `stream` names, after admission: S300 without a
 * channel port, S001 naming the field for a ref that is not a writer ref,
 * S218 when the engine refuses it.  inner (may be NULL) still sees every
 * piece of a stream that is not streamed. */
int exec_stream_open(struct exec_stream *s, const struct sbx_stream_host *host, json_t *stream, exec_output_fn inner,
		     void *inner_ud, sbx_error_t *err);

/* Starts the watch when a stream is open: a send still under way once
 * `deadline` passed or cancelled(ud) says the sandbox stops is aborted
 * (the stream is then discarded, its reader sees it aborted). */
int exec_stream_watch(struct exec_stream *s, int64_t deadline, bool (*cancelled)(void *ud), void *ud,
		      sbx_error_t *err);

/* The exec's on_output with `ud` the struct exec_stream: 1 for a streamed
 * stream's piece (sent, or dropped after a failed send), else inner's
 * answer (0 without one: kept for the reply). */
int exec_stream_output(void *ud, int fd, const void *data, size_t len);

/* Stops the watch, then closes every writer: a normal Close when the
 * command exited (fail_text NULL), else the error frame {"error":
 * fail_text} first. */
void exec_stream_close(struct exec_stream *s, const char *fail_text);

#endif
