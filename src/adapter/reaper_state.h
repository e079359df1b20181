/* The reaper's state (reaper.h), which the adapter holds (adapter_state.h):
 * apart from the reaper's functions, which work on the adapter, so the
 * adapter's state does not include what includes it. */
#ifndef SBX_ADAPTER_REAPER_STATE_H
#define SBX_ADAPTER_REAPER_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct sbx_adapter;
struct reaper_handoff;

struct reaper {
	struct sbx_adapter *a;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct reaper_handoff *handed, **handed_tail; /* oldest first */
	bool running, stopping;
};

#endif
