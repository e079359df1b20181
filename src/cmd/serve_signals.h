/* SIGTERM/SIGINT for serve and serve --front: blocked in every thread and
 * turned into engine_stop() by one waiting thread. */
#ifndef SBX_CMD_SERVE_SIGNALS_H
#define SBX_CMD_SERVE_SIGNALS_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#include "common/error.h"
#include "engine/engine.h"

struct serve_signals {
	sigset_t set;
	struct engine *engine;
	atomic_bool requested; /* SIGTERM/SIGINT arrived: a stop, not a failure */
	atomic_bool wake_only; /* serve ends by itself and sends the SIGTERM that wakes the waiter */
	pthread_t thread;
};

/* Blocks the signals: before any thread starts, so that only the waiter
 * receives them.  Ignores SIGPIPE. */
void serve_signals_block(struct serve_signals *s);
/* Starts the waiter, which stops e. */
int serve_signals_start(struct serve_signals *s, struct engine *e, sbx_error_t *err);
/* Wakes the waiter if no signal came, and reaps it. */
void serve_signals_end(struct serve_signals *s);
/* Waits for the first registered connection for as long as it takes.
 * Returns 0 when connected, -1 with *err when the engine rejected us or a
 * stop was asked for. */
int serve_wait_engine(struct engine *e, struct serve_signals *s, sbx_error_t *err);

#endif
