/* The live workers (see worker_table.h). */
#include "worker/worker_table.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "vm/vm.h"

struct worker_table *worker_table_new(const struct sbx_config *cfg, struct sbx_jail_host *jail,
				      struct sbx_mem_budget *mem, sbx_error_t *err)
{
	struct worker_table *t = calloc(1, sizeof(*t));
	if (t == NULL)
		return sbx_error_errno(err, ENOMEM, "worker table"), NULL;
	pthread_mutex_init(&t->lock, NULL);
	sbx_cond_init_monotonic(&t->changed);
	t->cfg = cfg;
	t->jail = jail;
	t->mem = mem;
	return t;
}

static void live_free(struct worker_live *w)
{
	sbx_error_free(&w->boot_err);
	free(w->name);
	free(w);
}

/* SIGTERM to the worker's process; the supervisor kills the VM at kill_at. */
static void request_stop(struct worker_live *w, int64_t grace_ms)
{
	int64_t at = sbx_now_ms() + grace_ms;
	if (w->stop_requested && w->kill_at <= at)
		return;
	w->kill_at = at;
	if (w->stop_requested)
		return;
	w->stop_requested = true;
	sbx_error_t err = NULL;
	if (w->proc != NULL && sbx_vm_proc_kill(w->proc, SIGTERM, &err) < 0)
		sbx_debug("worker %s: SIGTERM: %s", w->name, sbx_error_msg(err));
	sbx_error_free(&err);
}

void worker_stop_locked(struct worker_table *t, struct worker_live *w, int64_t grace_ms)
{
	while (w->busy)
		pthread_cond_wait(&t->changed, &t->lock);
	if (!w->thread_live)
		return;
	w->busy = true;
	if (worker_state_active(w->state))
		request_stop(w, grace_ms);
	pthread_t th = w->thread;
	pthread_mutex_unlock(&t->lock);
	pthread_join(th, NULL);
	pthread_mutex_lock(&t->lock);
	w->thread_live = false;
	w->busy = false;
	pthread_cond_broadcast(&t->changed);
}

void worker_table_free(struct worker_table *t)
{
	if (t == NULL)
		return;
	pthread_mutex_lock(&t->lock);
	unsigned n = 0;
	/* Every worker is told first, so their graces run side by side. */
	for (struct worker_live *w = t->head; w != NULL; w = w->next) {
		if (w->thread_live && worker_state_active(w->state)) {
			request_stop(w, WORKER_SHUTDOWN_GRACE_MS);
			n++;
		}
	}
	for (struct worker_live *w = t->head; w != NULL; w = w->next)
		worker_stop_locked(t, w, WORKER_SHUTDOWN_GRACE_MS);
	while (t->head != NULL) {
		struct worker_live *w = t->head;
		t->head = w->next;
		live_free(w);
	}
	pthread_mutex_unlock(&t->lock);
	if (n > 0)
		sbx_info("stopped %u worker VM%s", n, n == 1 ? "" : "s");
	pthread_cond_destroy(&t->changed);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

struct worker_live *worker_table_find(struct worker_table *t, const char *name)
{
	for (struct worker_live *w = t->head; w != NULL; w = w->next) {
		if (strcmp(w->name, name) == 0)
			return w;
	}
	return NULL;
}

struct worker_live *worker_table_get(struct worker_table *t, const char *name, sbx_error_t *err)
{
	struct worker_live *w = worker_table_find(t, name);
	if (w != NULL)
		return w;
	w = calloc(1, sizeof(*w));
	if (w == NULL || (w->name = strdup(name)) == NULL) {
		free(w);
		return sbx_error_errno(err, ENOMEM, "worker %s", name), NULL;
	}
	w->state = WORKER_PREPARED;
	w->next = t->head;
	t->head = w;
	return w;
}

void worker_set_state(struct worker_table *t, struct worker_live *w, enum worker_state s)
{
	w->state = s;
	pthread_cond_broadcast(&t->changed);
}

const char *worker_state_name(enum worker_state s)
{
	static const char *const names[] = {
		[WORKER_ABSENT] = "absent",   [WORKER_PREPARED] = "prepared", [WORKER_STARTING] = "starting",
		[WORKER_RUNNING] = "running", [WORKER_EXITED] = "exited",     [WORKER_STOPPED] = "stopped",
		[WORKER_FAILED] = "failed",
	};
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "failed";
}

bool worker_state_active(enum worker_state s)
{
	return s == WORKER_STARTING || s == WORKER_RUNNING;
}
