/* The live-worker table: states, lookups, and stop's hand-off to a
 * supervisor thread (a stand-in here: no VM). */
#include <pthread.h>
#include <string.h>

#include "common/clock.h"
#include "harness.h"
#include "worker/worker_table.h"

TEST(state_names_are_the_contracts)
{
	CHECK_STR(worker_state_name(WORKER_ABSENT), "absent");
	CHECK_STR(worker_state_name(WORKER_PREPARED), "prepared");
	CHECK_STR(worker_state_name(WORKER_STARTING), "starting");
	CHECK_STR(worker_state_name(WORKER_RUNNING), "running");
	CHECK_STR(worker_state_name(WORKER_EXITED), "exited");
	CHECK_STR(worker_state_name(WORKER_STOPPED), "stopped");
	CHECK_STR(worker_state_name(WORKER_FAILED), "failed");
	CHECK(worker_state_active(WORKER_STARTING) && worker_state_active(WORKER_RUNNING));
	CHECK(!worker_state_active(WORKER_EXITED) && !worker_state_active(WORKER_PREPARED));
}

TEST(get_creates_once_find_does_not)
{
	struct sbx_mem_budget mem;
	sbx_mem_budget_init(&mem, 1024);
	sbx_error_t err = NULL;
	struct worker_table *t = worker_table_new(NULL, NULL, &mem, &err);
	CHECK(t != NULL);
	pthread_mutex_lock(&t->lock);
	CHECK(worker_table_find(t, "a") == NULL);
	struct worker_live *a = worker_table_get(t, "a", &err);
	CHECK(a != NULL);
	CHECK_INT(a->state, WORKER_PREPARED);
	CHECK(worker_table_get(t, "a", &err) == a);
	CHECK(worker_table_find(t, "a") == a);
	CHECK(worker_table_find(t, "b") == NULL);
	/* No thread: a stop returns at once. */
	worker_stop_locked(t, a, 1000);
	pthread_mutex_unlock(&t->lock);
	worker_table_free(t);
	sbx_mem_budget_destroy(&mem);
}

struct fake {
	struct worker_table *t;
	struct worker_live *w;
	int64_t kill_at_seen;
};

/* A supervisor that runs until a stop asks, then reports stopped. */
static void *fake_supervisor(void *arg)
{
	struct fake *f = arg;
	pthread_mutex_lock(&f->t->lock);
	worker_set_state(f->t, f->w, WORKER_RUNNING);
	while (!f->w->stop_requested)
		pthread_cond_wait(&f->t->changed, &f->t->lock);
	f->kill_at_seen = f->w->kill_at;
	worker_set_state(f->t, f->w, WORKER_STOPPED);
	pthread_mutex_unlock(&f->t->lock);
	return NULL;
}

TEST(stop_asks_the_supervisor_and_joins_it)
{
	struct sbx_mem_budget mem;
	sbx_mem_budget_init(&mem, 1024);
	sbx_error_t err = NULL;
	struct worker_table *t = worker_table_new(NULL, NULL, &mem, &err);
	CHECK(t != NULL);
	pthread_mutex_lock(&t->lock);
	struct worker_live *w = worker_table_get(t, "w", &err);
	struct fake f = { t, w, 0 };
	w->state = WORKER_STARTING;
	CHECK(pthread_create(&w->thread, NULL, fake_supervisor, &f) == 0);
	w->thread_live = true;
	while (w->state != WORKER_RUNNING)
		pthread_cond_wait(&t->changed, &t->lock);
	int64_t before = sbx_now_ms();
	/* The fake waits on `changed`: wake it once the request is made. */
	pthread_cond_broadcast(&t->changed);
	worker_stop_locked(t, w, 5000);
	CHECK(!w->thread_live);
	CHECK(!w->busy);
	CHECK_INT(w->state, WORKER_STOPPED);
	CHECK(f.kill_at_seen >= before + 5000 && f.kill_at_seen <= sbx_now_ms() + 5000);
	pthread_mutex_unlock(&t->lock);
	worker_table_free(t);
	sbx_mem_budget_destroy(&mem);
}
