/* The warm pool's refill over a fake VM maker: what a take starts, and
 * when. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "adapter/config/config.h"
#include "adapter/vm_backend/warm_pool.h"
#include "common/clock.h"
#include "harness.h"

static atomic_int made, discarded;

static void *make(void *ctx, const char *image, const char *ref)
{
	(void)ctx;
	(void)image;
	(void)ref;
	atomic_fetch_add(&made, 1);
	return malloc(1);
}

static void discard(void *ctx, void *vm)
{
	(void)ctx;
	atomic_fetch_add(&discarded, 1);
	free(vm);
}

/* Whether `made` reaches n within ms. */
static int made_within(int n, int64_t ms)
{
	int64_t end = sbx_now_ms() + ms;
	while (atomic_load(&made) < n && sbx_now_ms() < end)
		usleep(5000);
	return atomic_load(&made) >= n;
}

static struct sbx_config *config(void)
{
	json_t *v = json_loads("{\"image_allowlist\":[\"python\"],\"warm_pool\":{\"python\":2}}", 0, NULL);
	sbx_error_t err = NULL;
	struct sbx_config *cfg = sbx_config_parse(v, &err);
	json_decref(v);
	sbx_error_free(&err);
	return cfg;
}

TEST(warm_pool_refills_later_while_one_is_left_at_once_when_empty)
{
	struct sbx_config *cfg = config();
	CHECK(cfg != NULL);
	atomic_store(&made, 0);
	atomic_store(&discarded, 0);
	struct warm_pool *p = warm_pool_start(cfg, make, discard, NULL);
	CHECK(p != NULL);
	CHECK(made_within(2, 10000));
	/* One taken, one left: no replacement within the first second... */
	void *a = warm_pool_take(p, "python");
	CHECK(a != NULL);
	usleep(1000 * 1000);
	CHECK_INT(atomic_load(&made), 2);
	/* ...but one after the delay. */
	CHECK(made_within(3, 10000));
	/* Both taken: the empty slot is refilled without the delay. */
	void *b = warm_pool_take(p, "python"), *c = warm_pool_take(p, "python");
	int64_t t = sbx_now_ms();
	CHECK(b != NULL && c != NULL && b != c);
	CHECK(made_within(4, 10000));
	CHECK(sbx_now_ms() - t < 1500);
	CHECK(warm_pool_take(p, "node") == NULL);
	warm_pool_stop(p);
	/* The parked ones went with the pool; the taken ones are the caller's. */
	CHECK_INT(atomic_load(&discarded), atomic_load(&made) - 3);
	free(a);
	free(b);
	free(c);
	sbx_config_free(cfg);
}

TEST(warm_pool_ready_counts_the_parked_vms)
{
	struct sbx_config *cfg = config();
	CHECK(cfg != NULL);
	atomic_store(&made, 0);
	CHECK_INT(warm_pool_ready(NULL), 0);
	struct warm_pool *p = warm_pool_start(cfg, make, discard, NULL);
	CHECK(p != NULL);
	CHECK(made_within(2, 10000));
	CHECK_INT(warm_pool_ready(p), 2);
	void *a = warm_pool_take(p, "python");
	CHECK(a != NULL);
	/* Its replacement waits two seconds: one is left meanwhile. */
	CHECK_INT(warm_pool_ready(p), 1);
	warm_pool_stop(p);
	free(a);
	sbx_config_free(cfg);
}
