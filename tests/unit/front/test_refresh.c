/* A call that found nothing gets a refresh begun after it asked, so a member
 * that joined a moment ago is found; such refreshes begin at least
 * FRONT_CALL_REFRESH_MS apart, and calls that waited together share one.
 * The engine client is stopped, so the members' reads fail at once; the
 * pinned member list needs no engine to be found. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "front/front_internal.h"
#include "front/front_metrics.h"
#include "harness.h"

#define CALLERS 8

static struct engine *stopped_engine(void)
{
	sbx_error_t err = NULL;
	struct engine_options opts = { .url = "ws://127.0.0.1:1", .worker_name = "test", .worker_version = "0" };
	struct engine *e = engine_new(&opts, &err);
	if (e == NULL)
		abort();
	engine_stop(e);
	return e;
}

/* sandbox_libkrun_front_refreshes_total as a scrape shows it. */
static long refreshes(void)
{
	size_t n, len;
	struct sbx_metric *const *fams = front_metric_families(&n);
	sbx_error_t err = NULL;
	char *text = sbx_metrics_render(fams, n, &len, &err);
	sbx_error_free(&err);
	const char *line = text != NULL ? strstr(text, "\nsandbox_libkrun_front_refreshes_total ") : NULL;
	long v = line != NULL ? strtol(line + strlen("\nsandbox_libkrun_front_refreshes_total "), NULL, 10) : -1;
	free(text);
	return v;
}

TEST(a_call_waits_for_a_refresh_begun_after_it)
{
	sbx_error_t err = NULL;
	struct engine *e = stopped_engine();
	struct front *f = front_new(e, NULL, "m1", &err);
	CHECK(f != NULL);
	int64_t last = sbx_now_ms() - 100;
	atomic_store(&f->refreshed_ms, last);
	long before = refreshes();
	int64_t asked = sbx_now_ms();
	CHECK_INT(front_refresh_for_call(f), 0);
	/* It waited out the rest of the interval since the last refresh
	 * began, then read the members: a lower bound from that moment, not
	 * from when this thread got to ask (which a loaded machine delays). */
	CHECK(sbx_now_ms() >= last + FRONT_CALL_REFRESH_MS - 5);
	CHECK(atomic_load(&f->refreshed_ms) > asked);
	CHECK_INT(refreshes(), before + 1);
	CHECK_INT(f->nmembers, 1);
	CHECK(!f->members[0].up);
	front_free(f);
	engine_free(e);
}

static void *caller(void *arg)
{
	front_refresh_for_call(arg);
	return NULL;
}

TEST(callers_that_wait_together_share_one_refresh)
{
	sbx_error_t err = NULL;
	struct engine *e = stopped_engine();
	struct front *f = front_new(e, NULL, "m1", &err);
	CHECK(f != NULL);
	atomic_store(&f->refreshed_ms, sbx_now_ms());
	long before = refreshes();
	pthread_t t[CALLERS];
	for (int i = 0; i < CALLERS; i++)
		CHECK_INT(pthread_create(&t[i], NULL, caller, f), 0);
	for (int i = 0; i < CALLERS; i++)
		pthread_join(t[i], NULL);
	/* One, or two if a caller started after the first refresh began. */
	long made = refreshes() - before;
	CHECK(made >= 1 && made <= 2);
	front_free(f);
	engine_free(e);
}
