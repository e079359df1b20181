#include "adapter/process/process_follow.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/scodes.h"

#define FOLLOW_TICK_MS 1000 /* the loop looks at every follow at least this often */
#define FOLLOW_BURST 4      /* frames one follow sends in a turn before the others' */

enum follow_state { F_SENDING, F_CLOSING, F_DONE };

struct follower {
	char sandbox[SBX_UUID_STRLEN + 1];
	struct bg_proc *p;
	void *w; /* NULL while its writer opens (admitted, not served yet) */
	int fd;
	uint64_t off;
	/* The loop's alone once w is set. */
	enum follow_state state;
	bool pending; /* queued bytes wait for the socket (poll for `events`) */
	bool more;    /* it has more to send at once */
	short events;
	int64_t deadline; /* F_CLOSING: for the engine's answer to the Close */
};

struct follows {
	pthread_mutex_t lock;
	int wake; /* eventfd: new follows, new output, the stop */
	const struct sbx_stream_ops *ops;
	struct follower **items; /* every admitted follow, under lock */
	size_t n, cap;
	pthread_t thread;
	bool started, stopping;
};

struct follows *follows_new(sbx_error_t *err)
{
	struct follows *fl = calloc(1, sizeof(*fl));
	if (fl == NULL)
		return sbx_error_errno(err, ENOMEM, "follows"), NULL;
	fl->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fl->wake < 0) {
		sbx_error_errno(err, errno, "follows: eventfd");
		free(fl);
		return NULL;
	}
	pthread_mutex_init(&fl->lock, NULL);
	return fl;
}

static void wake(struct follows *fl)
{
	uint64_t one = 1;
	if (write(fl->wake, &one, sizeof(one)) < 0 && errno != EAGAIN)
		sbx_debug("follows: wake: %s", strerror(errno));
}

static void follower_free(struct follows *fl, struct follower *f)
{
	if (f->w != NULL)
		fl->ops->writer_free(f->w);
	bg_proc_unref(f->p);
	free(f);
}

/* ---- one follow's turn (the loop's thread) ------------------------------ */

/* Sends what is queued; false when the writer failed (f is done). */
static bool flush(struct follows *fl, struct follower *f)
{
	if (!f->pending)
		return true;
	sbx_error_t e = NULL;
	int r = fl->ops->writer_flush(f->w, &f->events, &e);
	if (r < 0) {
		sbx_debug("process::logs follow of %s: %s", f->p->id, sbx_error_msg(e));
		sbx_error_free(&e);
		f->state = F_DONE;
		return false;
	}
	f->pending = r == 0;
	return true;
}

/* Queues the end (the error frame of fail_text, if any, and the Close). */
static void finish(struct follows *fl, struct follower *f, const char *fail_text)
{
	sbx_error_t e = NULL;
	if (fl->ops->writer_queue(f->w, NULL, 0, fail_text, &e) < 0) {
		sbx_debug("process::logs follow of %s: %s", f->p->id, sbx_error_msg(e));
		sbx_error_free(&e);
		f->state = F_DONE;
		return;
	}
	f->state = F_CLOSING;
	f->deadline = sbx_now_ms() + FOLLOW_CLOSE_WAIT_MS;
	f->pending = true;
	flush(fl, f);
}

/* The next bytes from f->off into buf: >0; 0 for none now (*ended once
 * the process exited and all of it went); -1 when the ring let go of
 * f->off already. */
static ssize_t next_chunk(struct follower *f, uint8_t *buf, bool *ended)
{
	struct bg_proc *p = f->p;
	const struct proc_ring *r = f->fd == 2 ? &p->err : &p->out;
	pthread_mutex_lock(&p->lock);
	ssize_t n = f->off < proc_ring_start(r) ? -1 : (ssize_t)proc_ring_copy(r, f->off, buf, FOLLOW_FRAME_MAX);
	*ended = n == 0 && !p->running;
	pthread_mutex_unlock(&p->lock);
	return n;
}

/* What f does now: flush, then up to FOLLOW_BURST frames while the socket
 * takes them all, or its end. */
static void turn(struct follows *fl, struct follower *f, uint8_t *buf)
{
	f->more = false;
	if (!flush(fl, f) || f->pending)
		return;
	if (f->state == F_CLOSING) {
		/* The Close went: the engine's answer (writer_gone) or this ends it. */
		if (sbx_now_ms() >= f->deadline)
			f->state = F_DONE;
		return;
	}
	for (int i = 0; i < FOLLOW_BURST; i++) {
		bool ended = false;
		ssize_t n = next_chunk(f, buf, &ended);
		if (n < 0) {
			char text[160];
			snprintf(text, sizeof(text),
				 "the log let go of offset %" PRIu64 " before it was sent (background_log_bytes); "
				 "read on with process::logs",
				 f->off);
			finish(fl, f, text);
			return;
		}
		if (n == 0) {
			if (ended)
				finish(fl, f, NULL);
			return;
		}
		sbx_error_t e = NULL;
		if (fl->ops->writer_queue(f->w, buf, (size_t)n, NULL, &e) < 0) {
			sbx_debug("process::logs follow of %s: %s", f->p->id, sbx_error_msg(e));
			sbx_error_free(&e);
			f->state = F_DONE;
			return;
		}
		f->off += (uint64_t)n;
		f->pending = true;
		if (!flush(fl, f) || f->pending)
			return;
	}
	f->more = true;
}

/* ---- the loop ------------------------------------------------------------ */

/* Takes the follows that are done out of the table and frees them. */
static void drop_done(struct follows *fl)
{
	struct follower *done[64];
	size_t n_done;
	do {
		n_done = 0;
		pthread_mutex_lock(&fl->lock);
		for (size_t i = 0; i < fl->n && n_done < 64;) {
			struct follower *f = fl->items[i];
			if (f->w != NULL && f->state == F_DONE) {
				done[n_done++] = f;
				fl->items[i] = fl->items[--fl->n];
			} else {
				i++;
			}
		}
		pthread_mutex_unlock(&fl->lock);
		for (size_t i = 0; i < n_done; i++)
			follower_free(fl, done[i]);
	} while (n_done == 64);
}

struct loop_buffers {
	uint8_t *buf;
	struct follower **cur;
	struct pollfd *pfd;
	size_t cap;
};

/* The follows being served now, into lb->cur (at most lb->cap - 1: the
 * last pollfd is the eventfd's); *all counts those still opening too. */
static size_t snapshot(struct follows *fl, struct loop_buffers *lb, bool *stopping, size_t *all)
{
	pthread_mutex_lock(&fl->lock);
	if (fl->n + 1 > lb->cap) {
		size_t ncap = fl->n + 16;
		struct follower **cur = realloc(lb->cur, ncap * sizeof(*cur));
		if (cur != NULL)
			lb->cur = cur;
		struct pollfd *pfd = cur != NULL ? realloc(lb->pfd, ncap * sizeof(*pfd)) : NULL;
		if (pfd != NULL) {
			lb->pfd = pfd;
			lb->cap = ncap;
		}
	}
	size_t n = 0;
	for (size_t i = 0; i < fl->n && n + 1 < lb->cap; i++)
		if (fl->items[i]->w != NULL)
			lb->cur[n++] = fl->items[i];
	*stopping = fl->stopping;
	*all = fl->n;
	pthread_mutex_unlock(&fl->lock);
	return n;
}

static void *loop_main(void *arg)
{
	struct follows *fl = arg;
	struct loop_buffers lb = { .buf = malloc(FOLLOW_FRAME_MAX) };
	int64_t give_up_at = 0;
	for (;;) {
		bool stopping;
		size_t all;
		size_t n = snapshot(fl, &lb, &stopping, &all);
		if (stopping && all == 0)
			break;
		if (stopping && give_up_at == 0)
			give_up_at = sbx_now_ms() + FOLLOW_STOP_WAIT_MS;
		bool give_up = lb.buf == NULL || (stopping && sbx_now_ms() >= give_up_at);
		int timeout = stopping ? 100 : FOLLOW_TICK_MS;
		for (size_t i = 0; i < n; i++) {
			struct follower *f = lb.cur[i];
			if (give_up)
				f->state = F_DONE;
			if (f->state != F_DONE)
				turn(fl, f, lb.buf);
			lb.pfd[i] = (struct pollfd){ .fd = f->state == F_DONE ? -1 : fl->ops->writer_fd(f->w),
						     .events = (short)(POLLIN | (f->pending ? f->events : 0)) };
			int64_t left = f->deadline - sbx_now_ms();
			if (f->more)
				timeout = 0;
			else if (f->state == F_CLOSING && !f->pending && left < timeout)
				timeout = left > 0 ? (int)left : 0;
		}
		if (lb.cap == 0) {
			/* No memory for even the eventfd's pollfd: look again soon. */
			usleep(FOLLOW_TICK_MS * 100);
			continue;
		}
		lb.pfd[n] = (struct pollfd){ .fd = fl->wake, .events = POLLIN };
		if (poll(lb.pfd, n + 1, timeout) < 0 && errno != EINTR)
			sbx_warn("follows: poll: %s", strerror(errno));
		uint64_t v;
		if ((lb.pfd[n].revents & POLLIN) != 0 && read(fl->wake, &v, sizeof(v)) < 0 && errno != EAGAIN)
			sbx_debug("follows: eventfd: %s", strerror(errno));
		for (size_t i = 0; i < n; i++) {
			struct follower *f = lb.cur[i];
			if (lb.pfd[i].fd < 0 || (lb.pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0 ||
			    !fl->ops->writer_gone(f->w))
				continue;
			if (f->state == F_SENDING)
				sbx_info("process::logs follow of %s: its reader left at offset %" PRIu64, f->p->id,
					 f->off);
			f->state = F_DONE;
		}
		drop_done(fl);
	}
	free(lb.buf);
	free(lb.cur);
	free(lb.pfd);
	return NULL;
}

void follows_free(struct follows *fl)
{
	if (fl == NULL)
		return;
	pthread_mutex_lock(&fl->lock);
	fl->stopping = true;
	bool started = fl->started;
	pthread_mutex_unlock(&fl->lock);
	wake(fl);
	if (started)
		pthread_join(fl->thread, NULL);
	/* Without a loop (it never started), nothing was admitted. */
	for (size_t i = 0; i < fl->n; i++)
		follower_free(fl, fl->items[i]);
	free(fl->items);
	close(fl->wake);
	pthread_mutex_destroy(&fl->lock);
	free(fl);
}

/* ---- admission ----------------------------------------------------------- */

static unsigned count_locked(const struct follows *fl, const char *sandbox_id)
{
	unsigned n = 0;
	for (size_t i = 0; i < fl->n; i++)
		n += sandbox_id == NULL || strcmp(fl->items[i]->sandbox, sandbox_id) == 0;
	return n;
}

unsigned follows_count(struct follows *fl, const char *sandbox_id)
{
	pthread_mutex_lock(&fl->lock);
	unsigned n = count_locked(fl, sandbox_id);
	pthread_mutex_unlock(&fl->lock);
	return n;
}

/* Admits f under the caps and starts the loop at the first. */
static int admit_locked(struct follows *fl, const struct sbx_config *cfg, struct follower *f, sbx_error_t *err)
{
	if (count_locked(fl, f->sandbox) >= cfg->max_follows_per_sandbox)
		return sbx_error_scode(err, SBX_S_EXEC_CAP,
				       "sandbox %s is at its follow cap (max_follows_per_sandbox: %u process::logs "
				       "follows streaming); end one (its reader leaves the channel) or read with offsets",
				       f->sandbox, cfg->max_follows_per_sandbox);
	if (fl->n >= cfg->max_follows)
		return sbx_error_scode(err, SBX_S_EXEC_CAP,
				       "the adapter is at its follow cap (max_follows: %u process::logs follows streaming "
				       "in all sandboxes); end one (its reader leaves the channel) or read with offsets",
				       cfg->max_follows);
	if (fl->n == fl->cap) {
		size_t ncap = fl->cap ? fl->cap * 2 : 16;
		struct follower **items = realloc(fl->items, ncap * sizeof(*items));
		if (items == NULL)
			return sbx_error_errno(err, ENOMEM, "process::logs follow");
		fl->items = items;
		fl->cap = ncap;
	}
	if (!fl->started) {
		int rc = pthread_create(&fl->thread, NULL, loop_main, fl);
		if (rc != 0)
			return sbx_error_errno(err, rc, "process::logs follow: pthread_create");
		fl->started = true;
	}
	fl->items[fl->n++] = f;
	return 0;
}

static void unadmit(struct follows *fl, struct follower *f)
{
	pthread_mutex_lock(&fl->lock);
	for (size_t i = 0; i < fl->n; i++) {
		if (fl->items[i] == f) {
			fl->items[i] = fl->items[--fl->n];
			break;
		}
	}
	pthread_mutex_unlock(&fl->lock);
}

int process_follow_start(struct sbx_adapter *a, const char *sandbox_id, struct bg_proc *p, int fd, uint64_t from,
			 json_t *ref, sbx_error_t *err)
{
	struct follows *fl = a->follows;
	const struct sbx_stream_ops *ops = a->streams.ops;
	if (ops == NULL || ops->writer_fd == NULL || ops->writer_queue == NULL || ops->writer_flush == NULL ||
	    ops->writer_gone == NULL || ops->writer_free == NULL)
		return sbx_error_scode(err, SBX_S_VM_BOOT, "byte channels are not available in this sandbox-libkrun "
							   "build: call process::logs without `follow`");
	struct follower *f = calloc(1, sizeof(*f));
	if (f == NULL)
		return sbx_error_errno(err, ENOMEM, "process::logs follow");
	snprintf(f->sandbox, sizeof(f->sandbox), "%s", sandbox_id);
	f->fd = fd;
	f->off = from;
	pthread_mutex_lock(&fl->lock);
	fl->ops = ops;
	int rc = admit_locked(fl, a->cfg, f, err);
	pthread_mutex_unlock(&fl->lock);
	if (rc < 0) {
		free(f);
		return -1;
	}
	/* Admitted first: a refused follow opens no connection. */
	void *w = ops->writer_open(a->streams.ctx, ref, err);
	if (w == NULL) {
		unadmit(fl, f);
		free(f);
		return -1;
	}
	bg_proc_ref(p);
	f->p = p;
	bg_proc_watch(p, fl->wake);
	pthread_mutex_lock(&fl->lock);
	f->w = w;
	pthread_mutex_unlock(&fl->lock);
	wake(fl);
	return 0;
}
