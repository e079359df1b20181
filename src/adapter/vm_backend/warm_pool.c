#include "adapter/vm_backend/warm_pool.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "adapter/sandbox/catalog.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/metrics_families.h"

/* After a failed boot, the next try of that pool waits this long. */
#define RETRY_S 30
/* A replacement's restore and warm-up take about a second of CPU: while
 * the pool still has a VM of that image, it waits this long after a take,
 * so that the sandbox just handed out gets the host's cores for its first
 * commands.  An empty slot is refilled at once. */
#define REFILL_DELAY_MS 2000

struct slot {
	const char *image, *ref; /* borrowed from the configuration */
	uint32_t want, n;
	int64_t taken_ms; /* monotonic time of the last take */
	void **vms;
};

struct warm_pool {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	struct slot *slots;
	size_t n_slots;
	warm_pool_make_fn make;
	warm_pool_discard_fn discard;
	void *ctx;
	pthread_t thread;
};

/* With p->lock held: a slot to refill now, or NULL and in *wait the ms
 * until a slot that waits after a take is due (0: none wants a VM). */
static struct slot *wanting(struct warm_pool *p, int64_t *wait)
{
	int64_t now = sbx_now_ms();
	*wait = 0;
	for (size_t i = 0; i < p->n_slots; i++) {
		struct slot *s = &p->slots[i];
		if (s->n >= s->want)
			continue;
		int64_t due = s->n > 0 ? s->taken_ms + REFILL_DELAY_MS - now : 0;
		if (due <= 0)
			return s;
		if (*wait == 0 || due < *wait)
			*wait = due;
	}
	return NULL;
}

/* With p->lock held: waits until `ms` from now or a signal. */
static void wait_ms(struct warm_pool *p, int64_t ms)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&p->cond, &p->lock, &until);
}

static void *refill(void *arg)
{
	struct warm_pool *p = arg;
	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		int64_t wait;
		struct slot *s = wanting(p, &wait);
		if (s == NULL) {
			if (wait > 0)
				wait_ms(p, wait);
			else
				pthread_cond_wait(&p->cond, &p->lock);
			continue;
		}
		pthread_mutex_unlock(&p->lock);
		void *vm = p->make(p->ctx, s->image, s->ref);
		pthread_mutex_lock(&p->lock);
		if (vm == NULL) {
			struct timespec until;
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += RETRY_S;
			while (!p->stop && pthread_cond_timedwait(&p->cond, &p->lock, &until) == 0)
				;
		} else if (p->stop || s->n == s->want) {
			pthread_mutex_unlock(&p->lock);
			p->discard(p->ctx, vm);
			pthread_mutex_lock(&p->lock);
		} else {
			s->vms[s->n++] = vm;
			sbx_info("warm pool: %u of %u VMs of %s parked", s->n, s->want, s->image);
		}
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static void pool_free(struct warm_pool *p)
{
	for (size_t i = 0; i < p->n_slots; i++) {
		for (uint32_t k = 0; k < p->slots[i].n; k++)
			p->discard(p->ctx, p->slots[i].vms[k]);
		free(p->slots[i].vms);
	}
	free(p->slots);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

struct warm_pool *warm_pool_start(const struct sbx_config *cfg, warm_pool_make_fn make, warm_pool_discard_fn discard,
				  void *ctx)
{
	if (cfg->n_warm_pool == 0 || cfg->warm_pool_max == 0)
		return NULL;
	struct warm_pool *p = calloc(1, sizeof(*p));
	if (p == NULL || (p->slots = calloc(cfg->n_warm_pool, sizeof(*p->slots))) == NULL) {
		free(p);
		sbx_warn("warm pool: out of memory; creates boot as without it");
		return NULL;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->make = make;
	p->discard = discard;
	p->ctx = ctx;
	/* warm_pool_max bounds them all, in the configuration's order. */
	uint32_t left = cfg->warm_pool_max;
	for (size_t i = 0; i < cfg->n_warm_pool && left > 0; i++) {
		const struct sbx_warm_pool_entry *e = &cfg->warm_pool[i];
		sbx_error_t err = NULL;
		const char *ref = sbx_catalog_resolve(cfg, e->image, &err);
		if (ref == NULL) {
			sbx_warn("warm pool: %s: %s", e->image, sbx_error_msg(err));
			sbx_error_free(&err);
			continue;
		}
		uint32_t want = e->count < left ? e->count : left;
		if (want == 0)
			continue;
		struct slot *s = &p->slots[p->n_slots];
		if ((s->vms = calloc(want, sizeof(void *))) == NULL)
			break;
		s->image = e->image;
		s->ref = ref;
		s->want = want;
		left -= want;
		p->n_slots++;
	}
	if (p->n_slots == 0 || pthread_create(&p->thread, NULL, refill, p) != 0) {
		if (p->n_slots > 0)
			sbx_warn("warm pool: no thread; creates boot as without it");
		pool_free(p);
		return NULL;
	}
	for (size_t i = 0; i < p->n_slots; i++)
		sbx_info("warm pool: %u parked VM%s of %s", p->slots[i].want, p->slots[i].want == 1 ? "" : "s",
			 p->slots[i].image);
	return p;
}

void *warm_pool_take(struct warm_pool *p, const char *image)
{
	if (p == NULL)
		return NULL;
	void *vm = NULL;
	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < p->n_slots && vm == NULL; i++) {
		struct slot *s = &p->slots[i];
		if (strcmp(s->image, image) == 0 && s->n > 0) {
			vm = s->vms[--s->n];
			s->taken_ms = sbx_now_ms();
			sbx_info("warm pool: a parked VM of %s taken (%u left)", image, s->n);
		}
	}
	if (vm != NULL)
		pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return vm;
}

uint32_t warm_pool_ready(struct warm_pool *p)
{
	if (p == NULL)
		return 0;
	uint32_t n = 0;
	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < p->n_slots; i++)
		n += p->slots[i].n;
	pthread_mutex_unlock(&p->lock);
	return n;
}

void warm_pool_stop(struct warm_pool *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	pool_free(p);
}

void warm_pool_collect_metrics(struct warm_pool *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < p->n_slots; i++) {
		const char *image[] = { p->slots[i].image };
		sbx_metric_set(&sbx_m_warm_pool, image, p->slots[i].n);
		sbx_metric_set(&sbx_m_warm_pool_target, image, p->slots[i].want);
	}
	pthread_mutex_unlock(&p->lock);
}
