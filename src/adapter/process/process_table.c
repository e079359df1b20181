#include "adapter/process/process_table.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/scodes.h"

struct bg_sandbox {
	char id[SBX_UUID_STRLEN + 1];
	bool keep_alive;
	uint32_t reserved; /* starts admitted, not added yet */
	struct bg_proc **procs; /* oldest first */
	size_t n, cap;
};

struct process_table {
	pthread_mutex_t lock;
	struct bg_sandbox **items;
	size_t n, cap;
};

struct process_table *process_table_new(sbx_error_t *err)
{
	struct process_table *t = calloc(1, sizeof(*t));
	if (t == NULL)
		return sbx_error_errno(err, ENOMEM, "process table"), NULL;
	pthread_mutex_init(&t->lock, NULL);
	return t;
}

/* Ends the table's hold on `p`: its pump first (the one who removes a
 * process from the table joins it), then its reference. */
static void retire(struct bg_proc *p)
{
	if (p->has_pump)
		pthread_join(p->pump, NULL);
	bg_proc_unref(p);
}

static void sandbox_free(struct bg_sandbox *s)
{
	for (size_t i = 0; i < s->n; i++)
		retire(s->procs[i]);
	free(s->procs);
	free(s);
}

void process_table_free(struct process_table *t)
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < t->n; i++)
		sandbox_free(t->items[i]);
	free(t->items);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static struct bg_sandbox *find_locked(struct process_table *t, const char *id, size_t *index)
{
	for (size_t i = 0; i < t->n; i++) {
		if (strcmp(t->items[i]->id, id) == 0) {
			if (index != NULL)
				*index = i;
			return t->items[i];
		}
	}
	return NULL;
}

static struct bg_sandbox *get_locked(struct process_table *t, const char *id, sbx_error_t *err)
{
	struct bg_sandbox *s = find_locked(t, id, NULL);
	if (s != NULL)
		return s;
	if (t->n == t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 8;
		struct bg_sandbox **items = realloc(t->items, ncap * sizeof(*items));
		if (items == NULL)
			return sbx_error_errno(err, ENOMEM, "process table"), NULL;
		t->items = items;
		t->cap = ncap;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return sbx_error_errno(err, ENOMEM, "process table"), NULL;
	snprintf(s->id, sizeof(s->id), "%s", id);
	t->items[t->n++] = s;
	return s;
}

int process_table_keep_alive(struct process_table *t, const char *sandbox_id, sbx_error_t *err)
{
	pthread_mutex_lock(&t->lock);
	struct bg_sandbox *s = get_locked(t, sandbox_id, err);
	if (s != NULL)
		s->keep_alive = true;
	pthread_mutex_unlock(&t->lock);
	return s != NULL ? 0 : -1;
}

bool process_table_kept_alive(struct process_table *t, const char *sandbox_id)
{
	pthread_mutex_lock(&t->lock);
	struct bg_sandbox *s = find_locked(t, sandbox_id, NULL);
	bool keep = s != NULL && s->keep_alive;
	pthread_mutex_unlock(&t->lock);
	return keep;
}

static uint32_t running_locked(const struct bg_sandbox *s)
{
	uint32_t n = s->reserved;
	for (size_t i = 0; i < s->n; i++) {
		struct bg_proc *p = s->procs[i];
		pthread_mutex_lock(&p->lock);
		n += p->running;
		pthread_mutex_unlock(&p->lock);
	}
	return n;
}


void process_table_unreserve(struct process_table *t, const char *sandbox_id)
{
	pthread_mutex_lock(&t->lock);
	struct bg_sandbox *s = find_locked(t, sandbox_id, NULL);
	if (s != NULL && s->reserved > 0)
		s->reserved--;
	pthread_mutex_unlock(&t->lock);
}

/* Takes out of `s` the oldest exited process while `cap` or more exited
 * ones are kept; NULL when there are fewer. */
static struct bg_proc *evict_locked(struct bg_sandbox *s, uint32_t cap)
{
	size_t exited = 0, oldest = SIZE_MAX;
	for (size_t i = 0; i < s->n; i++) {
		struct bg_proc *p = s->procs[i];
		pthread_mutex_lock(&p->lock);
		if (!p->running) {
			exited++;
			if (oldest == SIZE_MAX)
				oldest = i;
		}
		pthread_mutex_unlock(&p->lock);
	}
	if (exited < cap || oldest == SIZE_MAX)
		return NULL;
	struct bg_proc *p = s->procs[oldest];
	memmove(&s->procs[oldest], &s->procs[oldest + 1], (s->n - oldest - 1) * sizeof(*s->procs));
	s->n--;
	return p;
}

/* Ends the table's hold on what evict_locked took out. */
static void retire_all(struct bg_proc **gone, size_t n)
{
	for (size_t i = 0; i < n; i++)
		retire(gone[i]);
}

int process_table_reserve(struct process_table *t, const char *sandbox_id, uint32_t cap, sbx_error_t *err)
{
	struct bg_proc *gone[4];
	size_t n_gone = 0;
	pthread_mutex_lock(&t->lock);
	struct bg_sandbox *s = get_locked(t, sandbox_id, err);
	int rc = s != NULL ? 0 : -1;
	if (s != NULL && running_locked(s) >= cap)
		rc = sbx_error_scode(err, SBX_S_EXEC_CAP,
				     "sandbox %s is at its background process cap (max_background_per_sandbox: %u "
				     "running)",
				     sandbox_id, cap);
	else if (s != NULL)
		s->reserved++;
	/* The oldest exited one makes room now, before the new one's logs
	 * are charged to the memory budget. */
	while (rc == 0 && n_gone < 4 && (gone[n_gone] = evict_locked(s, cap)) != NULL)
		n_gone++;
	pthread_mutex_unlock(&t->lock);
	retire_all(gone, n_gone);
	return rc;
}

void process_table_add(struct process_table *t, const char *sandbox_id, struct bg_proc *p, uint32_t cap)
{
	struct bg_proc *gone[4];
	size_t n_gone = 0;
	pthread_mutex_lock(&t->lock);
	struct bg_sandbox *s = find_locked(t, sandbox_id, NULL);
	if (s != NULL && s->reserved > 0)
		s->reserved--;
	while (s != NULL && n_gone < 4 && (gone[n_gone] = evict_locked(s, cap)) != NULL)
		n_gone++;
	bool added = false;
	if (s != NULL && s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 4;
		struct bg_proc **procs = realloc(s->procs, ncap * sizeof(*procs));
		if (procs != NULL) {
			s->procs = procs;
			s->cap = ncap;
		}
	}
	if (s != NULL && s->n < s->cap) {
		bg_proc_ref(p);
		s->procs[s->n++] = p;
		added = true;
	}
	pthread_mutex_unlock(&t->lock);
	retire_all(gone, n_gone);
	/* Without room in the table (no memory): the pump still runs and
	 * ends it with the sandbox, but nothing lists it. */
	if (!added && p->has_pump)
		pthread_detach(p->pump);
}

struct bg_proc *process_table_find(struct process_table *t, const char *sandbox_id, const char *process_id,
				   sbx_error_t *err)
{
	struct bg_proc *found = NULL;
	pthread_mutex_lock(&t->lock);
	struct bg_sandbox *s = find_locked(t, sandbox_id, NULL);
	for (size_t i = 0; s != NULL && i < s->n && found == NULL; i++) {
		if (strcmp(s->procs[i]->id, process_id) == 0) {
			found = s->procs[i];
			bg_proc_ref(found);
		}
	}
	pthread_mutex_unlock(&t->lock);
	if (found == NULL)
		sbx_error_scode(err, SBX_S_INVALID_REQUEST, "no background process %s in sandbox %s", process_id,
				sandbox_id);
	return found;
}

json_t *process_table_rows(struct process_table *t, const char *sandbox_id)
{
	return process_table_map(t, sandbox_id, bg_proc_row);
}

json_t *process_table_map(struct process_table *t, const char *sandbox_id, json_t *(*fn)(struct bg_proc *p))
{
	json_t *rows = json_array();
	pthread_mutex_lock(&t->lock);
	struct bg_sandbox *s = find_locked(t, sandbox_id, NULL);
	for (size_t i = 0; rows != NULL && s != NULL && i < s->n; i++) {
		if (json_array_append_new(rows, fn(s->procs[i])) < 0) {
			json_decref(rows);
			rows = NULL;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return rows;
}

void process_table_drop(struct process_table *t, const char *sandbox_id)
{
	pthread_mutex_lock(&t->lock);
	size_t i;
	struct bg_sandbox *s = find_locked(t, sandbox_id, &i);
	if (s != NULL)
		t->items[i] = t->items[--t->n];
	pthread_mutex_unlock(&t->lock);
	if (s != NULL)
		sandbox_free(s);
}
