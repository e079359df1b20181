#include "adapter/process/process_entry.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/wall_time.h"

struct bg_proc *bg_proc_new(json_t *argv, size_t log_bytes, struct sbx_mem_budget *mem, sbx_error_t *err)
{
	uint64_t charge = 2 * (uint64_t)log_bytes;
	if (mem != NULL && sbx_mem_budget_take_logs(mem, charge, err) < 0)
		return NULL;
	struct bg_proc *p = calloc(1, sizeof(*p));
	if (p == NULL || sbx_uuid_v4(p->id) < 0) {
		free(p);
		if (mem != NULL)
			sbx_mem_budget_give_logs(mem, charge);
		return sbx_error_errno(err, ENOMEM, "background process"), NULL;
	}
	p->wake_fd = -1;
	p->mem = mem;
	p->charged = mem != NULL ? charge : 0;
	p->argv = json_incref(argv);
	p->started_ms = sbx_wall_ms();
	p->running = true;
	p->refs = 1;
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->handle_lock, NULL);
	sbx_cond_init_monotonic(&p->changed);
	proc_ring_init(&p->out, log_bytes);
	proc_ring_init(&p->err, log_bytes);
	return p;
}

void bg_proc_ref(struct bg_proc *p)
{
	__atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED);
}

void bg_proc_unref(struct bg_proc *p)
{
	if (p == NULL || __atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	json_decref(p->argv);
	proc_ring_free(&p->out);
	proc_ring_free(&p->err);
	pthread_cond_destroy(&p->changed);
	pthread_mutex_destroy(&p->lock);
	pthread_mutex_destroy(&p->handle_lock);
	if (p->mem != NULL)
		sbx_mem_budget_give_logs(p->mem, p->charged);
	free(p);
}

/* Under p->lock: tells the waiters and the follow loop. */
static void changed_locked(struct bg_proc *p)
{
	pthread_cond_broadcast(&p->changed);
	uint64_t one = 1;
	/* Fails only while the counter is full: the loop is awake already. */
	if (p->wake_fd >= 0 && write(p->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		sbx_debug("background process %s: waking the follow loop: %s", p->id, strerror(errno));
}

void bg_proc_watch(struct bg_proc *p, int wake_fd)
{
	pthread_mutex_lock(&p->lock);
	p->wake_fd = wake_fd;
	pthread_mutex_unlock(&p->lock);
}

void bg_proc_output(struct bg_proc *p, int fd, const void *data, size_t len)
{
	pthread_mutex_lock(&p->lock);
	proc_ring_append(fd == 2 ? &p->err : &p->out, data, len);
	changed_locked(p);
	pthread_mutex_unlock(&p->lock);
}

void bg_proc_exited(struct bg_proc *p, int code)
{
	pthread_mutex_lock(&p->lock);
	if (p->running) {
		p->running = false;
		p->has_code = code >= 0;
		p->exit_code = code;
		p->ended_ms = sbx_wall_ms();
	}
	changed_locked(p);
	pthread_mutex_unlock(&p->lock);
}

int bg_proc_signal(struct bg_proc *p, int sig, bool *sent, sbx_error_t *err)
{
	int rc = 0;
	*sent = false;
	/* Under handle_lock: the pump frees the handle only after taking it
	 * under the same lock. */
	pthread_mutex_lock(&p->handle_lock);
	pthread_mutex_lock(&p->lock);
	bool running = p->running;
	pthread_mutex_unlock(&p->lock);
	if (running && p->handle != NULL) {
		rc = p->ops->proc_signal(p->handle, sig, err);
		*sent = rc == 0;
	}
	pthread_mutex_unlock(&p->handle_lock);
	return rc;
}

bool bg_proc_wait(struct bg_proc *p, int64_t deadline)
{
	pthread_mutex_lock(&p->lock);
	while (p->running && sbx_now_ms() < deadline) {
		struct timespec ts = sbx_ms_timespec(deadline);
		pthread_cond_timedwait(&p->changed, &p->lock, &ts);
	}
	bool running = p->running;
	pthread_mutex_unlock(&p->lock);
	return running;
}

/* The bytes at the end of p[0..n) that start a UTF-8 character without
 * finishing it (0-3). */
static size_t incomplete_tail(const uint8_t *p, size_t n)
{
	size_t back = 0;
	while (back < n && back < 4 && (p[n - 1 - back] & 0xC0) == 0x80)
		back++;
	if (back == n || back == 4)
		return 0;
	uint8_t lead = p[n - 1 - back];
	size_t want = lead >= 0xF0 && lead <= 0xF4 ? 4 : lead >= 0xE0 && lead <= 0xEF ? 3 : lead >= 0xC2 && lead <= 0xDF ? 2 : 0;
	return want > back + 1 ? back + 1 : 0;
}

int bg_proc_slice(struct bg_proc *p, int fd, uint64_t offset, size_t max, struct bg_slice *s, sbx_error_t *err)
{
	*s = (struct bg_slice){ 0 };
	pthread_mutex_lock(&p->lock);
	const struct proc_ring *r = fd == 2 ? &p->err : &p->out;
	uint64_t from = offset, start = proc_ring_start(r);
	s->running = p->running;
	s->dropped = from < start;
	if (s->dropped)
		from = start;
	uint64_t avail = r->end > from ? r->end - from : 0;
	size_t n = avail < max ? (size_t)avail : max;
	s->data = malloc(n > 0 ? n : 1);
	if (s->data == NULL) {
		pthread_mutex_unlock(&p->lock);
		return sbx_error_errno(err, ENOMEM, "process log");
	}
	n = proc_ring_copy(r, from, s->data, n);
	bool at_end = !p->running && from + n == r->end;
	pthread_mutex_unlock(&p->lock);
	size_t skip = 0;
	/* The ring's oldest byte may be inside a character: start at the next. */
	while (s->dropped && skip < n && skip < 3 && (s->data[skip] & 0xC0) == 0x80)
		skip++;
	memmove(s->data, s->data + skip, n - skip);
	n -= skip;
	from += skip;
	if (!at_end)
		n -= incomplete_tail(s->data, n);
	s->len = n;
	s->next = from + n;
	return 0;
}

/* {state, exit_code?} under p->lock. */
static json_t *state_locked(struct bg_proc *p)
{
	json_t *o = json_pack("{s:s}", "state", p->running ? "running" : "exited");
	if (o != NULL && !p->running && p->has_code)
		json_object_set_new(o, "exit_code", json_integer(p->exit_code));
	return o;
}

json_t *bg_proc_state(struct bg_proc *p)
{
	pthread_mutex_lock(&p->lock);
	json_t *o = state_locked(p);
	pthread_mutex_unlock(&p->lock);
	return o;
}

json_t *bg_proc_row(struct bg_proc *p)
{
	pthread_mutex_lock(&p->lock);
	json_t *st = state_locked(p);
	json_t *o = json_pack("{s:s, s:O, s:I, s:o}", "process_id", p->id, "argv", p->argv, "pid", (json_int_t)p->pid,
			      "state", json_incref(json_object_get(st, "state")));
	if (o != NULL && json_object_get(st, "exit_code") != NULL)
		json_object_set(o, "exit_code", json_object_get(st, "exit_code"));
	if (o != NULL) {
		sbx_wall_set(o, "started_at", p->started_ms);
		if (!p->running)
			sbx_wall_set(o, "ended_at", p->ended_ms);
		json_object_set_new(o, "bytes", json_pack("{s:I, s:I}", "stdout", (json_int_t)p->out.end, "stderr",
							 (json_int_t)p->err.end));
	}
	pthread_mutex_unlock(&p->lock);
	json_decref(st);
	return o;
}
