/* The iii engine client: one WebSocket connection to the engine, the worker
 * registration, function registration (replayed after every reconnect),
 * concurrent invocation of handlers and outbound calls to other functions.
 * See shared/spec/iii-protocol.md.  Nothing outside src/engine/ sees a
 * WebSocket frame. */
#ifndef SBX_ENGINE_H
#define SBX_ENGINE_H

#include <jansson.h>
#include <stdbool.h>

#include "common/error.h"

struct engine;

/* One incoming call, valid for the duration of the handler. */
struct engine_invocation {
	const char *invocation_id; /* NULL for fire-and-forget calls */
	const char *function_id;
	const char *traceparent;   /* NULL when absent */
	const char *baggage;       /* NULL when absent */
	struct engine *engine;
};

/* A handler returns 0 and sets *out to the result (a new reference, or NULL
 * for no result), or returns -1 and sets *out to an error body
 * {"code": str, "message": str[, "stacktrace": str]} (a new reference).
 * `data` is borrowed; it may carry the engine's `_caller_worker_id`.
 * Handlers run on their own threads, several at once. */
typedef int (*engine_handler_fn)(void *userdata, const struct engine_invocation *inv, json_t *data, json_t **out);

struct engine_function {
	const char *id;
	const char *description;
	json_t *request_format;  /* JSON Schema; borrowed, the engine keeps a reference */
	json_t *response_format; /* JSON Schema; borrowed, the engine keeps a reference */
	engine_handler_fn handler;
	void *userdata;
	/* A short call (a listing, a stop): it runs in a pool of its own, so
	 * that long calls filling theirs never hold it up. */
	bool quick;
};

struct engine_options {
	const char *url;           /* ws:// or wss:// */
	/* Extra "Name: value\r\n" lines sent on the upgrade request of every
	 * connect and reconnect (ws_headers_from_env()); NULL for none.  They
	 * may be secrets: never logged. */
	const char *headers;
	const char *worker_name;   /* reported in engine::workers::register */
	const char *worker_version;
	const char *description;
	/* Reported in engine::workers::register when not NULL or empty: the
	 * namespace the connection's functions live in (III_NAMESPACE; the
	 * engine refuses a blank one) and how the worker is isolated
	 * (III_ISOLATION). */
	const char *namespace;
	const char *isolation;
	/* WORKER_NAMESPACE_CONFLICT is not fatal: another connection holds the
	 * worker's lease, and this one reconnects about every second until it
	 * is gone and the engine gives the lease here (a standby front). */
	bool wait_for_lease;
	int max_concurrent_invocations; /* handler threads, 0 = default (256) */
	/* Invocations past the running limit wait in FIFO order; only when
	 * this many wait is one refused.  0 = default (1024). */
	int max_queued_invocations;
	/* The error body of a call refused because the queue is full, given
	 * the message naming the limits (a new reference); NULL = {code
	 * "too_many_invocations", message}. */
	json_t *(*busy_error)(const char *message);
};

/* Resolves the engine URL: III_URL, then III_ENGINE_URL, then
 * ws://127.0.0.1:49134. */
const char *engine_default_url(void);

struct engine *engine_new(const struct engine_options *opts, sbx_error_t *err);
/* Sets max_queued_invocations once the configuration says how many calls
 * may wait (0 = the default). */
void engine_set_max_queued(struct engine *e, int max_queued);
/* Registers a function now if connected, and again after every reconnect. */
int engine_add_function(struct engine *e, const struct engine_function *fn, sbx_error_t *err);
/* Starts the connection thread; it connects, reconnects with jittered
 * backoff (1 s -> 30 s) and replays the registrations. */
int engine_start(struct engine *e, sbx_error_t *err);
/* Waits until the first connection is open and registered; -1 on timeout. */
int engine_wait_connected(struct engine *e, int timeout_ms, sbx_error_t *err);

/* Calls another function and waits for its answer.
 * Returns 0 with *result set (new reference, json_null() when absent);
 * returns 1 with *error_body set when the callee answered with an error
 * ({code, message}); returns -1 with *err on timeout ("TIMEOUT"), lost
 * connection or a local failure.  `parent` (may be NULL) propagates trace
 * context. `data` is borrowed. */
int engine_call(struct engine *e, const struct engine_invocation *parent, const char *function_id, json_t *data,
		int timeout_ms, json_t **result, json_t **error_body, sbx_error_t *err);
/* engine_call() resolving function_id in `namespace` (invokefunction's
 * namespace field); NULL: the engine's default. */
int engine_call_in(struct engine *e, const struct engine_invocation *parent, const char *namespace,
		   const char *function_id, json_t *data, int timeout_ms, json_t **result, json_t **error_body,
		   sbx_error_t *err);

/* Runs fn(arg) on a detached thread that engine_free() waits for, like an
 * invocation: for work that outlives its handler, such as pumping a file
 * into a channel whose reader ref the handler returned.  fn should watch
 * engine_cancel_fd() so a stop ends it quickly. */
int engine_run_background(struct engine *e, void (*fn)(void *arg), void *arg, sbx_error_t *err);
/* Readable once engine_stop() was called (for poll()). */
int engine_cancel_fd(struct engine *e);

/* True after registrationrejected WORKER_NAMESPACE_CONFLICT (or another
 * fatal rejection): the client has stopped for good. */
bool engine_fatally_rejected(struct engine *e);
/* True once engine_stop() was called. */
bool engine_stopping(struct engine *e);
/* Blocks until engine_stop() is called or the client stops for good. */
void engine_wait_stopped(struct engine *e);
/* Closes the connection and makes engine_wait_stopped() return.  Safe to call
 * from a signal-handling thread. */
void engine_stop(struct engine *e);
/* Waits for running handlers to finish, then frees everything. */
void engine_free(struct engine *e);

#endif
