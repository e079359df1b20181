/* The live Compose workers of this daemon: one entry per worker started
 * since the daemon began, with its state, its supervisor thread and what
 * stop needs to reach it.  Everything in an entry is read and written
 * under the table's lock; `changed` is broadcast at every state change.
 *
 * States (contract §7.19 worker::status): a worker without an entry is
 * `prepared` when its record exists, else `absent`; an entry is
 * `starting` (VM booting, then the copy/setup/install steps), `running`
 * (the worker process runs), `exited` (it ended by itself: the VM is
 * stopped, exit_code set), `stopped` (worker::stop or the daemon ended it)
 * or `failed` (the VM did not boot, or died under it).  Nothing restarts a
 * worker: Compose decides.  Entries live as long as the table (destroy
 * sets `absent`), so a pointer taken under the lock stays valid. */
#ifndef SBX_WORKER_WORKER_TABLE_H
#define SBX_WORKER_WORKER_TABLE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "adapter/config/config.h"
#include "adapter/mem_budget.h"
#include "common/error.h"
#include "jail/jail.h"

struct sbx_vm_proc;

enum worker_state {
	WORKER_ABSENT,
	WORKER_PREPARED,
	WORKER_STARTING,
	WORKER_RUNNING,
	WORKER_EXITED,
	WORKER_STOPPED,
	WORKER_FAILED,
};

struct worker_live {
	struct worker_live *next;
	char *name;
	enum worker_state state;
	bool busy;           /* a stop or destroy is tearing it down: others wait */
	bool thread_live;    /* the supervisor thread has not been joined */
	pthread_t thread;
	sbx_error_t boot_err; /* why the boot failed (start answers it) */
	pid_t pid;           /* QEMU's, 0 when no VM */
	bool has_exit;
	int exit_code;
	int64_t started_at;  /* CLOCK_REALTIME seconds of the last start */
	bool stop_requested;
	int64_t kill_at;     /* CLOCK_MONOTONIC ms: then the VM is killed */
	struct sbx_vm_proc *proc; /* the guest process the supervisor runs, or NULL */
};

struct worker_table {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	struct worker_live *head;
	const struct sbx_config *cfg; /* borrowed */
	struct sbx_jail_host *jail;   /* borrowed; NULL: unconfined */
	struct sbx_mem_budget *mem;   /* borrowed */
};

struct worker_table *worker_table_new(const struct sbx_config *cfg, struct sbx_jail_host *jail,
				      struct sbx_mem_budget *mem, sbx_error_t *err);
/* Stops every live worker (SIGTERM to its process, its VM killed after
 * WORKER_SHUTDOWN_GRACE_MS) and frees the table. */
void worker_table_free(struct worker_table *t);
#define WORKER_SHUTDOWN_GRACE_MS 3000

/* Under the lock: the entry of `name`, or NULL. */
struct worker_live *worker_table_find(struct worker_table *t, const char *name);
/* Under the lock: the entry of `name`, created (state prepared) if missing. */
struct worker_live *worker_table_get(struct worker_table *t, const char *name, sbx_error_t *err);

/* Under the lock: sets the state and wakes the waiters. */
void worker_set_state(struct worker_table *t, struct worker_live *w, enum worker_state s);
/* The contract's name of a state ("running"). */
const char *worker_state_name(enum worker_state s);
bool worker_state_active(enum worker_state s); /* starting or running */

/* Asks a live worker to stop (SIGTERM to its process, the VM killed at
 * now + grace_ms) and waits, releasing the lock meanwhile, until its
 * supervisor thread is joined.  Called and returns under the lock. */
void worker_stop_locked(struct worker_table *t, struct worker_live *w, int64_t grace_ms);

#endif
