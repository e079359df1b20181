#include "cmd/serve_signals.h"

#include <string.h>

#include "common/log.h"

/* How often the wait for the first connection looks up from its sleep; the
 * wait itself has no limit. */
#define CONNECT_WAIT_SLICE_MS 60000

/* Calls engine_stop() from an ordinary thread, where it may lock and wake
 * other threads. */
static void *wait_signals(void *arg)
{
	struct serve_signals *s = arg;
	int sig;
	if (sigwait(&s->set, &sig) != 0 || atomic_load(&s->wake_only))
		return NULL;
	atomic_store(&s->requested, true);
	sbx_info("received %s: shutting down", strsignal(sig));
	engine_stop(s->engine);
	return NULL;
}

void serve_signals_block(struct serve_signals *s)
{
	atomic_store(&s->requested, false);
	atomic_store(&s->wake_only, false);
	sigemptyset(&s->set);
	sigaddset(&s->set, SIGTERM);
	sigaddset(&s->set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &s->set, NULL);
	signal(SIGPIPE, SIG_IGN);
}

int serve_signals_start(struct serve_signals *s, struct engine *e, sbx_error_t *err)
{
	s->engine = e;
	int rc = pthread_create(&s->thread, NULL, wait_signals, s);
	return rc == 0 ? 0 : sbx_error_errno(err, rc, "cannot start the signal thread");
}

void serve_signals_end(struct serve_signals *s)
{
	atomic_store(&s->wake_only, true);
	pthread_kill(s->thread, SIGTERM);
	pthread_join(s->thread, NULL);
}

int serve_wait_engine(struct engine *e, struct serve_signals *s, sbx_error_t *err)
{
	while (engine_wait_connected(e, CONNECT_WAIT_SLICE_MS, err) < 0) {
		if (engine_fatally_rejected(e) || atomic_load(&s->requested))
			return -1;
		sbx_error_free(err);
	}
	return 0;
}
