/* Background work that outlives an invocation (a channel pump), counted
 * with the invocations so that engine_free() waits for it. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "engine/engine_internal.h"

struct task {
	struct engine *e;
	void (*fn)(void *arg);
	void *arg;
};

static void *task_main(void *p)
{
	struct task *t = p;
	struct engine *e = t->e;
	t->fn(t->arg);
	free(t);
	engine_thread_done(e);
	return NULL;
}

int engine_run_background(struct engine *e, void (*fn)(void *arg), void *arg, sbx_error_t *err)
{
	struct task *t = malloc(sizeof(*t));
	if (t == NULL)
		return sbx_error_errno(err, ENOMEM, "background task");
	*t = (struct task){ e, fn, arg };
	pthread_mutex_lock(&e->lock);
	e->running++;
	pthread_mutex_unlock(&e->lock);

	int r = engine_thread_start(task_main, t);
	if (r == 0)
		return 0;
	free(t);
	engine_thread_done(e);
	return sbx_error_errno(err, r, "starting a background task");
}

int engine_cancel_fd(struct engine *e)
{
	return e->stop_fd;
}
