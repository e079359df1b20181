#include "adapter/reaper.h"

#include <errno.h>
#include <time.h>

#include "adapter/adapter.h"
#include "adapter/sandbox/sandbox.h"
#include "common/clock.h"
#include "common/log.h"

unsigned reaper_scan(struct sbx_adapter *a, bool all)
{
	unsigned n = 0;
	char id[SBX_UUID_STRLEN + 1];
	bool wedged;
	const struct sbx_backend_ops *ops = a->backend.ops;
	/* VMs that went (killed, crashed) while nobody called: not listed. */
	while (!all && ops != NULL && ops->alive != NULL && sbx_registry_claim_dead(a->reg, ops->alive, id)) {
		sbx_warn("sandbox %s: its VM is gone; removing the sandbox", id);
		sandbox_teardown(a, id);
		n++;
	}
	if (!all && ops != NULL && ops->net_activity_ms != NULL)
		sbx_registry_note_net_activity(a->reg, ops->net_activity_ms);
	while (sbx_registry_claim_reapable(a->reg, all, a->cfg->max_exec_timeout_ms, id, &wedged)) {
		if (wedged)
			sbx_warn("sandbox %s: execs still counted in flight past the busy grace; reaping it anyway", id);
		else if (!all)
			sbx_info("sandbox %s: idle past its timeout; reaping it", id);
		sandbox_teardown(a, id);
		n++;
	}
	return n;
}

static void *reaper_main(void *arg)
{
	struct reaper *r = arg;
	struct sbx_adapter *a = r->a;
	pthread_mutex_lock(&r->lock);
	while (!r->stopping) {
		struct timespec until = sbx_ms_timespec(sbx_now_ms() + REAPER_PERIOD_MS);
		while (!r->stopping && pthread_cond_timedwait(&r->wake, &r->lock, &until) != ETIMEDOUT)
			;
		if (r->stopping)
			break;
		pthread_mutex_unlock(&r->lock);
		reaper_scan(a, false);
		pthread_mutex_lock(&r->lock);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

int reaper_start(struct reaper *r, struct sbx_adapter *a, sbx_error_t *err)
{
	r->a = a;
	sbx_cond_init_monotonic(&r->wake);
	pthread_mutex_init(&r->lock, NULL);
	r->stopping = false;
	int rc = pthread_create(&r->thread, NULL, reaper_main, r);
	if (rc != 0) {
		pthread_cond_destroy(&r->wake);
		pthread_mutex_destroy(&r->lock);
		return sbx_error_errno(err, rc, "reaper thread");
	}
	r->running = true;
	return 0;
}

void reaper_stop(struct reaper *r)
{
	if (!r->running)
		return;
	pthread_mutex_lock(&r->lock);
	r->stopping = true;
	pthread_cond_signal(&r->wake);
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->thread, NULL);
	pthread_cond_destroy(&r->wake);
	pthread_mutex_destroy(&r->lock);
	r->running = false;
}
