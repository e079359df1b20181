/* The adapter's open terminals (terminal.h): the list, the per-sandbox
 * cap, lookups, and the calls that act on one: open, resize, close. */
#include "adapter/terminal/terminal_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/request.h"
#include "adapter/scode.h"
#include "common/clock.h"
#include "common/scodes.h"
#include "common/wall_time.h"

struct sbx_terminals *sbx_terminals_new(sbx_error_t *err)
{
	struct sbx_terminals *t = calloc(1, sizeof(*t));
	if (t == NULL)
		return sbx_error_errno(err, ENOMEM, "terminals"), NULL;
	pthread_mutex_init(&t->lock, NULL);
	return t;
}

void sbx_terminals_free(struct sbx_terminals *t)
{
	if (t == NULL)
		return;
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* A reference to the terminal (S001 naming the id when unknown or exited). */
static struct sbx_terminal *terminal_find(struct sbx_terminals *t, const char *sandbox_id, const char *id, sbx_error_t *err)
{
	pthread_mutex_lock(&t->lock);
	struct sbx_terminal *term = t->head;
	while (term != NULL && (term->proc == NULL || strcmp(term->hold.id, sandbox_id) != 0 || strcmp(term->id, id) != 0))
		term = term->next;
	if (term != NULL) {
		pthread_mutex_lock(&term->lock);
		term->refs++;
		pthread_mutex_unlock(&term->lock);
	}
	pthread_mutex_unlock(&t->lock);
	if (term == NULL)
		sbx_error_scode(err, SBX_S_INVALID_REQUEST, "unknown terminal_id %.64s in sandbox %s (never opened, closed, or its command exited)",
				id, sandbox_id);
	return term;
}

/* Adds `term` unless its sandbox has SBX_TERMINALS_PER_SANDBOX already. */
static int table_add(struct sbx_terminals *t, struct sbx_terminal *term, sbx_error_t *err)
{
	pthread_mutex_lock(&t->lock);
	unsigned n = 0;
	for (struct sbx_terminal *o = t->head; o != NULL; o = o->next)
		n += strcmp(o->hold.id, term->hold.id) == 0;
	if (n < SBX_TERMINALS_PER_SANDBOX) {
		term->next = t->head;
		t->head = term;
	}
	pthread_mutex_unlock(&t->lock);
	if (n >= SBX_TERMINALS_PER_SANDBOX)
		return sbx_error_scode(err, SBX_S_EXEC_CAP,
				       "open terminals per sandbox (%u) reached: close one with terminal::close",
				       SBX_TERMINALS_PER_SANDBOX);
	return 0;
}

/* The command as a JSON array of strings. */
static json_t *argv_json(char *const *argv)
{
	json_t *a = json_array();
	for (size_t i = 0; a != NULL && argv[i] != NULL; i++) {
		if (json_array_append_new(a, json_string(argv[i])) < 0) {
			json_decref(a);
			a = NULL;
		}
	}
	return a;
}

json_t *sbx_terminal_rows(struct sbx_terminals *t, const char *sandbox_id)
{
	json_t *rows = json_array();
	pthread_mutex_lock(&t->lock);
	for (struct sbx_terminal *term = t->head; rows != NULL && term != NULL; term = term->next) {
		/* Started (its command runs) and of this sandbox. */
		if (term->proc == NULL || strcmp(term->hold.id, sandbox_id) != 0)
			continue;
		json_t *r = json_pack("{s:s, s:O, s:I}", "terminal_id", term->id, "argv", term->argv, "pid",
				      (json_int_t)term->pid);
		if (r != NULL)
			sbx_wall_set(r, "started_at", term->started_ms);
		if (json_array_append_new(rows, r) < 0) {
			json_decref(rows);
			rows = NULL;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return rows;
}

/* Undoes a failed open: out of the table, the VM let go, freed without
 * io.release(). */
static int open_fail(struct sbx_terminal *term, bool listed)
{
	if (listed)
		terminal_remove(term);
	fs_hold_release(&term->hold);
	term->io.release = NULL;
	terminal_unref(term);
	return -1;
}

int sbx_terminal_open(struct sbx_adapter *a, const char *sandbox_id, const struct sbx_terminal_spec *spec,
		      const struct sbx_terminal_io *io, char terminal_id[SBX_UUID_STRLEN + 1], sbx_error_t *err)
{
	struct sbx_terminal *term = calloc(1, sizeof(*term));
	if (term == NULL)
		return sbx_error_errno(err, ENOMEM, "terminal");
	pthread_mutex_init(&term->lock, NULL);
	pthread_cond_init(&term->cond, NULL);
	term->refs = 1; /* the opener's, handed to the pumps */
	term->table = a->terminals;
	term->io = *io;
	term->ops = a->backend.ops;
	term->hold = fs_hold_take(a, sandbox_id, err);
	if (term->hold.sb == NULL)
		return open_fail(term, false);
	if (term->ops == NULL || term->ops->proc_start == NULL || term->hold.sb->vm == NULL) {
		sbx_error_scode(err, SBX_S_VM_BOOT, SBX_NO_VM_DETAIL);
		return open_fail(term, false);
	}
	if (sbx_uuid_v4(term->id) < 0) {
		sbx_error_errno(err, EIO, "terminal id");
		return open_fail(term, false);
	}
	term->started_ms = sbx_wall_ms();
	if ((term->argv = argv_json(spec->argv)) == NULL) {
		sbx_error_errno(err, ENOMEM, "terminal");
		return open_fail(term, false);
	}
	if (table_add(a->terminals, term, err) < 0)
		return open_fail(term, false);
	struct sbx_proc_request req = {
		.argv = spec->argv, .env = spec->env, .with_stdin = true, .rows = spec->rows, .cols = spec->cols,
	};
	uint32_t pid = 0;
	void *proc = term->ops->proc_start(term->hold.sb->vm, &req, &pid, err);
	if (proc == NULL) {
		sbx_error_default_scode(err, SBX_S_VM_BOOT);
		return open_fail(term, true);
	}
	pthread_mutex_lock(&a->terminals->lock);
	term->proc = proc;
	term->pid = pid;
	pthread_mutex_unlock(&a->terminals->lock);
	memcpy(terminal_id, term->id, sizeof(term->id));
	if (terminal_pumps_start(term, err) < 0) {
		/* terminal_pumps_start() ended the process and freed it. */
		return -1;
	}
	return 0;
}

/* The sandbox's S002/S004, then the terminal (S001). */
static struct sbx_terminal *lookup(struct sbx_adapter *a, const char *sandbox_id, const char *terminal_id,
				  sbx_error_t *err)
{
	char id[SBX_UUID_STRLEN + 1];
	if (req_sandbox_uuid(sandbox_id, id, err) < 0)
		return NULL;
	struct sbx_sandbox *sb = sbx_registry_acquire(a->reg, id, err);
	if (sb == NULL)
		return NULL;
	sbx_registry_release(a->reg, sb);
	return terminal_find(a->terminals, id, terminal_id, err);
}

int sbx_terminal_resize(struct sbx_adapter *a, const char *sandbox_id, const char *terminal_id, uint16_t rows,
			uint16_t cols, sbx_error_t *err)
{
	struct sbx_terminal *term = lookup(a, sandbox_id, terminal_id, err);
	if (term == NULL)
		return -1;
	int rc = -1;
	/* Not under the lock (the guest may be slow to answer); the output
	 * pump frees the process only once no resize uses it. */
	pthread_mutex_lock(&term->lock);
	bool usable = !term->closing && term->proc != NULL;
	term->resizing += usable;
	pthread_mutex_unlock(&term->lock);
	if (!usable)
		sbx_error_scode(err, SBX_S_INVALID_REQUEST, "terminal %s is closing", term->id);
	else if (term->ops->proc_resize == NULL)
		sbx_error_scode(err, SBX_S_VM_BOOT, SBX_NO_VM_DETAIL);
	else if ((rc = term->ops->proc_resize(term->proc, rows, cols, err)) < 0)
		sbx_error_default_scode(err, SBX_S_VM_BOOT);
	if (usable) {
		pthread_mutex_lock(&term->lock);
		term->resizing--;
		pthread_cond_broadcast(&term->cond);
		pthread_mutex_unlock(&term->lock);
	}
	terminal_unref(term);
	return rc;
}

int sbx_terminal_close(struct sbx_adapter *a, const char *sandbox_id, const char *terminal_id, sbx_error_t *err)
{
	struct sbx_terminal *term = lookup(a, sandbox_id, terminal_id, err);
	if (term == NULL)
		return -1;
	pthread_mutex_lock(&term->lock);
	term->closing = true;
	pthread_cond_broadcast(&term->cond);
	while (!term->out_done)
		pthread_cond_wait(&term->cond, &term->lock);
	pthread_mutex_unlock(&term->lock);
	terminal_unref(term);
	return 0;
}
