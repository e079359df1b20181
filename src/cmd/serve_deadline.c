#include "cmd/serve_deadline.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/clock.h"
#include "common/log.h"

#define CHECK_EVERY_MS 1000

struct deadline_slot {
	bool used;
	bool shut; /* shut down once; the server closes it */
	int fd;
	int64_t since;
};

struct serve_deadline {
	pthread_mutex_t lock; /* slots, stopping */
	pthread_cond_t wake;
	pthread_t thread;
	bool stopping;
	int deadline_ms;
	unsigned nslots;
	struct deadline_slot slots[];
};

/* The descriptor stays the connection's while its slot is used: the server
 * reports the close (serve_deadline_closed, under the same lock) before it
 * closes the descriptor, so a shutdown here never reaches another file. */
static void shut_expired(struct serve_deadline *d, int64_t now)
{
	for (unsigned i = 0; i < d->nslots; i++) {
		struct deadline_slot *s = &d->slots[i];
		if (!s->used || s->shut || now - s->since < d->deadline_ms)
			continue;
		if (shutdown(s->fd, SHUT_RDWR) < 0 && errno != ENOTCONN)
			sbx_debug("metrics: shutdown of a connection past its deadline: %s", strerror(errno));
		s->shut = true;
	}
}

static void *watch(void *arg)
{
	struct serve_deadline *d = arg;
	pthread_mutex_lock(&d->lock);
	while (!d->stopping) {
		struct timespec at = sbx_ms_timespec(sbx_now_ms() + CHECK_EVERY_MS);
		int rc = pthread_cond_timedwait(&d->wake, &d->lock, &at);
		if (rc != 0 && rc != ETIMEDOUT)
			sbx_debug("metrics: deadline wait: %s", strerror(rc));
		shut_expired(d, sbx_now_ms());
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

struct serve_deadline *serve_deadline_start(unsigned slots, int deadline_ms, sbx_error_t *err)
{
	struct serve_deadline *d = calloc(1, sizeof(*d) + slots * sizeof(d->slots[0]));
	if (d == NULL)
		return sbx_error_errno(err, ENOMEM, "metrics"), NULL;
	d->nslots = slots;
	d->deadline_ms = deadline_ms;
	pthread_mutex_init(&d->lock, NULL);
	sbx_cond_init_monotonic(&d->wake);
	int rc = pthread_create(&d->thread, NULL, watch, d);
	if (rc != 0) {
		pthread_cond_destroy(&d->wake);
		pthread_mutex_destroy(&d->lock);
		free(d);
		return sbx_error_errno(err, rc, "metrics: the deadline thread"), NULL;
	}
	return d;
}

void serve_deadline_stop(struct serve_deadline *d)
{
	if (d == NULL)
		return;
	pthread_mutex_lock(&d->lock);
	d->stopping = true;
	pthread_cond_signal(&d->wake);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->thread, NULL);
	pthread_cond_destroy(&d->wake);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

void *serve_deadline_opened(struct serve_deadline *d, int fd)
{
	struct deadline_slot *found = NULL;
	pthread_mutex_lock(&d->lock);
	for (unsigned i = 0; i < d->nslots && found == NULL; i++) {
		if (!d->slots[i].used)
			found = &d->slots[i];
	}
	if (found != NULL)
		*found = (struct deadline_slot){ .used = true, .fd = fd, .since = sbx_now_ms() };
	pthread_mutex_unlock(&d->lock);
	if (found == NULL)
		shutdown(fd, SHUT_RDWR);
	return found;
}

void serve_deadline_restart(struct serve_deadline *d, void *token)
{
	struct deadline_slot *s = token;
	if (s == NULL)
		return;
	pthread_mutex_lock(&d->lock);
	s->since = sbx_now_ms();
	pthread_mutex_unlock(&d->lock);
}

void serve_deadline_closed(struct serve_deadline *d, void *token)
{
	struct deadline_slot *s = token;
	if (s == NULL)
		return;
	pthread_mutex_lock(&d->lock);
	*s = (struct deadline_slot){ .used = false, .fd = -1 };
	pthread_mutex_unlock(&d->lock);
}
