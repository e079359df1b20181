#include "adapter/vm_backend/standby.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/metrics_families.h"

/* How often waiting VMs are checked for a removed image: a removed image's
 * standby would otherwise hold its template's RAM until the next create. */
#define STALE_CHECK_MS 5000

struct entry {
	char *image, *ref; /* NULL: a free entry */
	void *vm;          /* the waiting VM, or NULL */
	bool want;         /* launch one when none waits */
	int64_t used_ms;   /* the last create of this image */
	unsigned gen;      /* bumped when the entry changes image */
};

struct standby {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	struct entry e[STANDBY_IMAGES];
	standby_make_fn make;
	standby_discard_fn discard;
	standby_stale_fn stale;
	void *ctx;
	pthread_t thread;
};

static struct entry *find(struct standby *sb, const char *image)
{
	for (size_t i = 0; i < STANDBY_IMAGES; i++)
		if (sb->e[i].image != NULL && strcmp(sb->e[i].image, image) == 0)
			return &sb->e[i];
	return NULL;
}

/* With sb->lock held: waits until `ms` from now or a signal. */
static void wait_ms(struct standby *sb, int64_t ms)
{
	struct timespec until = sbx_ms_timespec(sbx_now_ms() + ms);
	pthread_cond_timedwait(&sb->cond, &sb->lock, &until);
}

/* With sb->lock held, dropped around the discard. */
static void discard_unlocked(struct standby *sb, void *vm)
{
	if (vm == NULL)
		return;
	pthread_mutex_unlock(&sb->lock);
	sb->discard(sb->ctx, vm);
	pthread_mutex_lock(&sb->lock);
}

/* With sb->lock held: stops the waiting VMs whose image is gone. */
static void drop_stale(struct standby *sb)
{
	for (size_t i = 0; i < STANDBY_IMAGES; i++) {
		struct entry *e = &sb->e[i];
		if (e->vm == NULL || !sb->stale(sb->ctx, e->vm))
			continue;
		sbx_info("standby: the VM waiting for %s stopped: its image is gone", e->image);
		void *vm = e->vm;
		e->vm = NULL;
		discard_unlocked(sb, vm);
	}
}

/* With sb->lock held: launches the standby of one entry that wants it. */
static void launch(struct standby *sb, struct entry *e)
{
	char *image = strdup(e->image), *ref = e->ref != NULL ? strdup(e->ref) : NULL;
	unsigned gen = e->gen;
	e->want = false;
	if (image == NULL || (e->ref != NULL && ref == NULL)) {
		free(image);
		free(ref);
		return;
	}
	pthread_mutex_unlock(&sb->lock);
	void *vm = sb->make(sb->ctx, image, ref);
	pthread_mutex_lock(&sb->lock);
	/* The entry may have gone to another image, or a create may have
	 * asked again while this one was launched: keep one VM at most. */
	if (vm != NULL && !sb->stop && e->gen == gen && e->vm == NULL) {
		e->vm = vm;
		e->want = false;
		sbx_info("standby: a VM of %s waits for the next create", image);
	} else {
		discard_unlocked(sb, vm);
	}
	free(image);
	free(ref);
}

static void *run(void *arg)
{
	struct standby *sb = arg;
	pthread_mutex_lock(&sb->lock);
	int64_t next_check = sbx_now_ms() + STALE_CHECK_MS;
	while (!sb->stop) {
		if (sbx_now_ms() >= next_check) {
			drop_stale(sb);
			next_check = sbx_now_ms() + STALE_CHECK_MS;
			continue;
		}
		struct entry *e = NULL;
		for (size_t i = 0; i < STANDBY_IMAGES && e == NULL; i++)
			if (sb->e[i].image != NULL && sb->e[i].want && sb->e[i].vm == NULL)
				e = &sb->e[i];
		if (e != NULL)
			launch(sb, e);
		else
			wait_ms(sb, next_check - sbx_now_ms());
	}
	pthread_mutex_unlock(&sb->lock);
	return NULL;
}

struct standby *standby_start(standby_make_fn make, standby_discard_fn discard, standby_stale_fn stale, void *ctx)
{
	struct standby *sb = calloc(1, sizeof(*sb));
	if (sb == NULL) {
		sbx_warn("standby: out of memory; creates restore as without it");
		return NULL;
	}
	pthread_mutex_init(&sb->lock, NULL);
	sbx_cond_init_monotonic(&sb->cond);
	sb->make = make;
	sb->discard = discard;
	sb->stale = stale;
	sb->ctx = ctx;
	if (pthread_create(&sb->thread, NULL, run, sb) != 0) {
		sbx_warn("standby: no thread; creates restore as without it");
		pthread_cond_destroy(&sb->cond);
		pthread_mutex_destroy(&sb->lock);
		free(sb);
		return NULL;
	}
	return sb;
}

void *standby_take(struct standby *sb, const char *image)
{
	if (sb == NULL)
		return NULL;
	pthread_mutex_lock(&sb->lock);
	struct entry *e = find(sb, image);
	void *vm = NULL;
	if (e != NULL && e->vm != NULL) {
		vm = e->vm;
		e->vm = NULL;
		e->used_ms = sbx_now_ms();
		sbx_info("standby: the VM waiting for %s taken", image);
	}
	pthread_mutex_unlock(&sb->lock);
	return vm;
}

void standby_want(struct standby *sb, const char *image, const char *ref)
{
	if (sb == NULL)
		return;
	pthread_mutex_lock(&sb->lock);
	void *victim = NULL;
	struct entry *e = find(sb, image);
	if (e == NULL) {
		/* A free entry, else the least recently used image's. */
		for (size_t i = 0; i < STANDBY_IMAGES; i++) {
			struct entry *c = &sb->e[i];
			if (e == NULL || c->image == NULL || (e->image != NULL && c->used_ms < e->used_ms))
				e = c;
			if (e->image == NULL)
				break;
		}
		char *im = strdup(image), *rf = ref != NULL ? strdup(ref) : NULL;
		if (im == NULL || (ref != NULL && rf == NULL)) {
			free(im);
			free(rf);
			pthread_mutex_unlock(&sb->lock);
			return;
		}
		victim = e->vm;
		free(e->image);
		free(e->ref);
		*e = (struct entry){ .image = im, .ref = rf, .gen = e->gen + 1 };
	}
	e->used_ms = sbx_now_ms();
	if (e->vm == NULL) {
		e->want = true;
		pthread_cond_broadcast(&sb->cond);
	}
	discard_unlocked(sb, victim);
	pthread_mutex_unlock(&sb->lock);
}

bool standby_ready(struct standby *sb)
{
	if (sb == NULL)
		return false;
	bool ready = false;
	pthread_mutex_lock(&sb->lock);
	for (size_t i = 0; i < STANDBY_IMAGES && !ready; i++)
		ready = sb->e[i].vm != NULL;
	pthread_mutex_unlock(&sb->lock);
	return ready;
}

void standby_stop(struct standby *sb)
{
	if (sb == NULL)
		return;
	pthread_mutex_lock(&sb->lock);
	sb->stop = true;
	pthread_cond_broadcast(&sb->cond);
	pthread_mutex_unlock(&sb->lock);
	pthread_join(sb->thread, NULL);
	for (size_t i = 0; i < STANDBY_IMAGES; i++) {
		if (sb->e[i].vm != NULL)
			sb->discard(sb->ctx, sb->e[i].vm);
		free(sb->e[i].image);
		free(sb->e[i].ref);
	}
	pthread_cond_destroy(&sb->cond);
	pthread_mutex_destroy(&sb->lock);
	free(sb);
}

void standby_collect_metrics(struct standby *sb)
{
	if (sb == NULL)
		return;
	pthread_mutex_lock(&sb->lock);
	sbx_metric_zero(&sbx_m_standby);
	for (size_t i = 0; i < STANDBY_IMAGES; i++) {
		if (sb->e[i].image != NULL)
			sbx_metric_set(&sbx_m_standby, (const char *[]){ sb->e[i].image }, sb->e[i].vm != NULL ? 1 : 0);
	}
	pthread_mutex_unlock(&sb->lock);
}
