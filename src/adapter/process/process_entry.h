/* One background process as the adapter keeps it: its state, its exit,
 * its two ring logs and its backend handle, shared by the pump that fills
 * it (process_pump.c), the calls that read it (handlers_process.c) and the
 * threads that follow it (process_follow.c).  Reference-counted; each
 * holder drops its own reference. */
#ifndef SBX_ADAPTER_PROCESS_ENTRY_H
#define SBX_ADAPTER_PROCESS_ENTRY_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "adapter/backend.h"
#include "adapter/mem_budget.h"
#include "adapter/process/process_ring.h"
#include "common/error.h"
#include "common/uuid.h"

/* What one process::logs reply carries at most (the rest: next call). */
#define PROC_LOGS_MAX_REPLY (1024u * 1024u)

struct bg_proc {
	char id[SBX_UUID_STRLEN + 1]; /* process_id */
	json_t *argv;                 /* the resolved command (owned) */
	uint32_t pid;                 /* in the guest */
	int64_t started_ms, ended_ms; /* CLOCK_REALTIME */

	pthread_mutex_t lock;
	pthread_cond_t changed; /* new output or the exit */
	bool running;
	bool has_code;
	int exit_code; /* 0-255, 128+signal; valid when has_code */
	struct proc_ring out, err;
	/* The backend's handle while the pump owns it; NULL once freed.  Its
	 * own lock (not `lock`, which the pump takes for every chunk), held
	 * by a signal around its call and by the pump to take the handle. */
	pthread_mutex_t handle_lock;
	const struct sbx_backend_ops *ops;
	void *handle;
	pthread_t pump;
	bool has_pump;
	unsigned refs;
	int wake_fd;                /* under lock: the follow loop's eventfd once followed, else -1 */
	struct sbx_mem_budget *mem; /* what its rings are charged to (NULL: nothing) */
	uint64_t charged;           /* bytes, given back with the last reference */
};

/* A running process with one reference (the caller's), its two rings of
 * log_bytes each charged to `mem` (NULL: to nothing) until the last
 * reference goes: S400 when the budget has no room for them. */
struct bg_proc *bg_proc_new(json_t *argv, size_t log_bytes, struct sbx_mem_budget *mem, sbx_error_t *err);
void bg_proc_ref(struct bg_proc *p);
void bg_proc_unref(struct bg_proc *p);

/* The pump's side: output of fd 1 or 2, then the end (code < 0: unknown);
 * each wakes the follow loop once one follows it (bg_proc_watch). */
void bg_proc_output(struct bg_proc *p, int fd, const void *data, size_t len);
void bg_proc_exited(struct bg_proc *p, int code);

/* Has output and the exit wake `wake_fd` (an eventfd that outlives p's
 * pump). */
void bg_proc_watch(struct bg_proc *p, int wake_fd);

/* process::signal: false when the process had exited already. */
int bg_proc_signal(struct bg_proc *p, int sig, bool *sent, sbx_error_t *err);
/* Waits until the process exits or `deadline` (sbx_now_ms) passes; returns
 * whether it runs. */
bool bg_proc_wait(struct bg_proc *p, int64_t deadline);

/* One slice of a log (fd 1 or 2) from `offset`, at most `max` bytes: *data
 * (malloc'd, *len bytes) starts at offset, or when the ring let go of it
 * (*dropped) at the first character boundary of what it keeps; *next is
 * the offset after it.  A character the process has not finished writing
 * is left for the next call, so slices taken from *next on never split
 * one. */
struct bg_slice {
	uint8_t *data;
	size_t len;
	uint64_t next;
	bool dropped, running;
};
int bg_proc_slice(struct bg_proc *p, int fd, uint64_t offset, size_t max, struct bg_slice *s, sbx_error_t *err);

/* {process_id, argv, state, exit_code?, started_at, ended_at?, bytes}. */
json_t *bg_proc_row(struct bg_proc *p);
/* {state, exit_code?}, as process::wait answers. */
json_t *bg_proc_state(struct bg_proc *p);

#endif
