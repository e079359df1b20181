#include "adapter/reaper.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "adapter/adapter_state.h"
#include "adapter/pause/sandbox_pause.h"
#include "adapter/sandbox/sandbox.h"
#include "common/clock.h"
#include "common/log.h"

/* idle_action pause: pauses the sandboxes idle past their timeout, a few
 * a scan; one that cannot be paused (a limit, a VM that cannot) is stopped
 * as idle_action stop would. */
static unsigned pause_idle(struct sbx_adapter *a, const struct reap_limits *lim)
{
	char ids[REAPER_PAUSES_PER_SCAN][SBX_UUID_STRLEN + 1];
	size_t n = sbx_registry_idle_ids(a->reg, lim, ids, REAPER_PAUSES_PER_SCAN);
	unsigned done = 0;
	for (size_t i = 0; i < n; i++) {
		sbx_error_t err = NULL;
		/* Each pause takes a while: the others' idleness is asked again. */
		int rc = sandbox_pause_idle(a, ids[i], lim, &err);
		if (rc > 0)
			continue;
		done++;
		if (rc == 0)
			continue;
		sbx_warn("sandbox %s: idle pause failed (%s); stopping it", ids[i], sbx_error_msg(err));
		sbx_error_free(&err);
		bool was_stopped;
		if (sbx_registry_claim_stop(a->reg, ids[i], &was_stopped, &err) == 0 && !was_stopped)
			sandbox_teardown(a, ids[i], SANDBOX_STOP_IDLE);
		sbx_error_free(&err);
	}
	return done;
}

unsigned reaper_scan(struct sbx_adapter *a, bool all)
{
	unsigned n = 0;
	char id[SBX_UUID_STRLEN + 1];
	bool wedged;
	const struct sbx_backend_ops *ops = a->backend.ops;
	/* VMs that went (killed, crashed) while nobody called: not listed. */
	while (!all && ops != NULL && ops->alive != NULL && sbx_registry_claim_dead(a->reg, ops->alive, id)) {
		sbx_warn("sandbox %s: its VM is gone; removing the sandbox", id);
		sandbox_teardown(a, id, SANDBOX_STOP_VM_DEATH);
		n++;
	}
	if (!all && ops != NULL && ops->net_activity_ms != NULL)
		sbx_registry_note_net_activity(a->reg, ops->net_activity_ms);
	const struct sbx_pause_config *pc = &a->cfg->pause;
	struct reap_limits lim = { a->cfg->max_exec_timeout_ms, pc->idle_action == SBX_IDLE_PAUSE, pc->paused_ttl_secs };
	if (!all && lim.pause_idle)
		n += pause_idle(a, &lim);
	bool expired;
	while (sbx_registry_claim_reapable(a->reg, all, &lim, id, &wedged, &expired)) {
		if (wedged)
			sbx_warn("sandbox %s: execs still counted in flight past the busy grace; reaping it anyway", id);
		else if (expired)
			sbx_info("sandbox %s: paused past paused_ttl_secs; deleting it", id);
		else if (!all)
			sbx_info("sandbox %s: idle past its timeout; reaping it", id);
		sandbox_teardown(a, id, all ? SANDBOX_STOP_SHUTDOWN : expired ? SANDBOX_STOP_PAUSED_TTL : SANDBOX_STOP_IDLE);
		n++;
	}
	return n;
}

struct reaper_handoff {
	struct reaper_handoff *next;
	void *vm;
	uint64_t mem_mib;
	char id[SBX_UUID_STRLEN + 1];
};

/* Stops every VM handed over; called and returns with r->lock held. */
static void stop_handed(struct reaper *r)
{
	while (r->handed != NULL) {
		struct reaper_handoff *h = r->handed;
		r->handed = h->next;
		if (r->handed == NULL)
			r->handed_tail = &r->handed;
		pthread_mutex_unlock(&r->lock);
		sandbox_release(r->a, h->id, h->vm, h->mem_mib, SANDBOX_STOP_RUN);
		free(h);
		pthread_mutex_lock(&r->lock);
	}
}

static void *reaper_main(void *arg)
{
	struct reaper *r = arg;
	struct sbx_adapter *a = r->a;
	pthread_mutex_lock(&r->lock);
	int64_t next_scan = sbx_now_ms() + REAPER_PERIOD_MS;
	for (;;) {
		stop_handed(r);
		if (r->stopping)
			break;
		if (sbx_now_ms() >= next_scan) {
			pthread_mutex_unlock(&r->lock);
			reaper_scan(a, false);
			pthread_mutex_lock(&r->lock);
			next_scan = sbx_now_ms() + REAPER_PERIOD_MS;
			continue;
		}
		struct timespec until = sbx_ms_timespec(next_scan);
		if (r->handed == NULL)
			pthread_cond_timedwait(&r->wake, &r->lock, &until);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

bool reaper_hand_over(struct reaper *r, void *vm, uint64_t mem_mib, const char *id)
{
	struct reaper_handoff *h = r->running ? malloc(sizeof(*h)) : NULL;
	if (h == NULL)
		return false;
	*h = (struct reaper_handoff){ .vm = vm, .mem_mib = mem_mib };
	snprintf(h->id, sizeof(h->id), "%s", id);
	pthread_mutex_lock(&r->lock);
	*r->handed_tail = h;
	r->handed_tail = &h->next;
	pthread_cond_signal(&r->wake);
	pthread_mutex_unlock(&r->lock);
	return true;
}

int reaper_start(struct reaper *r, struct sbx_adapter *a, sbx_error_t *err)
{
	r->a = a;
	sbx_cond_init_monotonic(&r->wake);
	pthread_mutex_init(&r->lock, NULL);
	r->stopping = false;
	r->handed = NULL;
	r->handed_tail = &r->handed;
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
	/* The thread stops what was handed over before it ends. */
	pthread_join(r->thread, NULL);
	pthread_cond_destroy(&r->wake);
	pthread_mutex_destroy(&r->lock);
	r->running = false;
}
