/* The idle reaper (contract §6.4): a thread that every REAPER_PERIOD_MS
 * claims the sandboxes reaper_decide() selects and tears them down. */
#ifndef SBX_ADAPTER_REAPER_H
#define SBX_ADAPTER_REAPER_H

#include <pthread.h>
#include <stdbool.h>

#include "common/error.h"

#define REAPER_PERIOD_MS 10000

struct sbx_adapter;

struct reaper {
	struct sbx_adapter *a;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool running, stopping;
};

int reaper_start(struct reaper *r, struct sbx_adapter *a, sbx_error_t *err);
/* Ends the thread (no-op when not started). */
void reaper_stop(struct reaper *r);
/* One scan: tears down every sandbox due (all of them with `all`);
 * returns how many. */
unsigned reaper_scan(struct sbx_adapter *a, bool all);

#endif
