/* The live sandboxes (contract §6.1), in memory only: id -> record.  All
 * access goes through the registry lock; a record handed out by acquire()
 * stays valid until release(), even if it is removed meanwhile. */
#ifndef SBX_ADAPTER_SANDBOX_REGISTRY_H
#define SBX_ADAPTER_SANDBOX_REGISTRY_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "common/error.h"
#include "common/uuid.h"

/* Where a sandbox's VM is (issue 40): running, or being paused, paused
 * (its QEMU gone, its state on disk), or being resumed. */
enum sbx_pause_state { SBX_SB_RUNNING, SBX_SB_PAUSING, SBX_SB_PAUSED, SBX_SB_RESUMING };

struct sbx_sandbox {
	char id[SBX_UUID_STRLEN + 1];
	char *name;  /* NULL when unset */
	char *image; /* catalog name */
	struct timespec created_at;   /* CLOCK_MONOTONIC */
	struct timespec last_exec_at; /* CLOCK_MONOTONIC */
	struct timespec last_net_at;  /* CLOCK_MONOTONIC: payload the guest's network relayed */
	uint64_t idle_timeout_secs;
	uint32_t cpus, memory_mb; /* 0 when created without a shape (tests) */
	bool network;
	uint32_t exec_in_flight;
	uint32_t fs_in_flight; /* fs operations (and read pumps) using the VM */
	bool stopped;
	void *vm; /* the backend's VM; NULL once detached (or in tests) */
	uint64_t mem_mib; /* committed to the memory budget for the VM */
	unsigned refs; /* the registry's own plus one per acquire() */
	json_t *ports; /* create's published ports [{guest, address, host}], NULL = none; set once */
	enum sbx_pause_state pause_state;
	uint64_t paused_bytes;      /* its state on disk while paused */
	uint64_t resume_mib;        /* while paused: the budget its resume takes back */
	struct timespec paused_at;  /* CLOCK_MONOTONIC: when it was paused */
	bool pause_kept;            /* paused, its record written beside its state:
				       a daemon that exits keeps it (pause/pause_record.h) */
	bool capturing;             /* a snapshot of it is being taken (issue 39) */
	char snapshot_id[SBX_UUID_STRLEN + 1]; /* created from this snapshot; "" when not */
};

struct sbx_registry;

struct sbx_registry *sbx_registry_new(sbx_error_t *err);
void sbx_registry_free(struct sbx_registry *reg);

/* Reserves a slot for a sandbox about to be created, so parallel creates
 * cannot overshoot `max` (S400 "max_concurrent_sandboxes (N) reached").
 * Stopped-but-unremoved records count, and those being paused or resumed;
 * paused ones do not (their QEMU is gone: they count against
 * max_paused_sandboxes). */
int sbx_registry_reserve(struct sbx_registry *reg, uint32_t max, sbx_error_t *err);
void sbx_registry_unreserve(struct sbx_registry *reg);
/* Turns a reservation into a record (owning `vm`, NULL without one, and the
 * `mem_mib` of the memory budget committed to it). */
int sbx_registry_insert_vm(struct sbx_registry *reg, const char *id, const char *name, const char *image,
			   uint64_t idle_timeout_secs, void *vm, uint64_t mem_mib, sbx_error_t *err);
/* Records the published ports of a sandbox just inserted (takes the
 * reference; dropped when the id is gone). */
void sbx_registry_set_ports(struct sbx_registry *reg, const char *id, json_t *ports);
int sbx_registry_insert(struct sbx_registry *reg, const char *id, const char *name, const char *image,
			uint64_t idle_timeout_secs, sbx_error_t *err);

/* The preamble of every per-sandbox call: S002 when `id` (canonical) is
 * unknown, S004 when it is marked stopped, or paused (or being paused or
 * resumed: auto_resume is the caller's, pause/sandbox_pause.h).  Bumps
 * last_exec_at. */
struct sbx_sandbox *sbx_registry_acquire(struct sbx_registry *reg, const char *id, sbx_error_t *err);
/* Like acquire(), and admits one exec: S003 when `cap` (at least 1) execs
 * are already in flight.  Pair with sbx_registry_exec_end(). */
struct sbx_sandbox *sbx_registry_exec_begin(struct sbx_registry *reg, const char *id, uint32_t cap,
					    sbx_error_t *err);
void sbx_registry_exec_end(struct sbx_registry *reg, struct sbx_sandbox *sb);
void sbx_registry_release(struct sbx_registry *reg, struct sbx_sandbox *sb);
/* acquire() then release(): S002/S004 for a sandbox an extension's call
 * names before it looks at its own tables (bumps the idle clock too). */
int sbx_registry_check(struct sbx_registry *reg, const char *id, sbx_error_t *err);
/* Like acquire(), for an fs operation: takes no exec slot, but keeps the
 * VM from being detached until sbx_registry_fs_end(). */
struct sbx_sandbox *sbx_registry_fs_begin(struct sbx_registry *reg, const char *id, sbx_error_t *err);
void sbx_registry_fs_end(struct sbx_registry *reg, struct sbx_sandbox *sb);
/* Bumps last_exec_at of a held record: a background process of a sandbox
 * created with keep_alive_while_running is activity for the reaper. */
void sbx_registry_touch(struct sbx_registry *reg, struct sbx_sandbox *sb);
/* Marks `id` stopped for `stop`: S002 when unknown; *was_stopped tells
 * whether another caller (the reaper) had claimed it already. */
int sbx_registry_claim_stop(struct sbx_registry *reg, const char *id, bool *was_stopped, sbx_error_t *err);
/* Drops the record from the registry (references stay valid). */
void sbx_registry_remove(struct sbx_registry *reg, const char *id);
/* For a record claimed stopped: waits until its execs have ended (they see
 * `stopped` and give up within a fraction of a second), removes it and
 * hands its VM to the caller, who stops it and gives back *mem_mib.  NULL
 * when it had none. */
void *sbx_registry_detach(struct sbx_registry *reg, const char *id, uint64_t *mem_mib);
/* Whether `sb` was claimed stopped (polled by running execs). */
bool sbx_registry_stopped(struct sbx_registry *reg, const struct sbx_sandbox *sb);
/* Claims (marks stopped) one record the reaper policy says to reap, or any
 * record not yet stopped when `all` (shutdown); copies its id to `id`.
 * Returns false when there is none.  Decision and claim happen under the
 * lock, so an exec admitted meanwhile is never killed.  With `pause_idle`
 * (idle_action pause) idle running sandboxes are left to
 * sbx_registry_idle_ids; paused ones are reaped past paused_ttl_secs
 * (*expired then true). */
struct reap_limits {
	uint64_t max_exec_timeout_ms;
	bool pause_idle;
	uint64_t paused_ttl_secs;
};
bool sbx_registry_claim_reapable(struct sbx_registry *reg, bool all, const struct reap_limits *lim,
				 char id[SBX_UUID_STRLEN + 1], bool *wedged, bool *expired);
/* Under idle_action pause: copies to ids (up to cap) the running sandboxes
 * the policy says to pause now, without claiming them; returns the count. */
size_t sbx_registry_idle_ids(struct sbx_registry *reg, const struct reap_limits *lim,
			     char (*ids)[SBX_UUID_STRLEN + 1], size_t cap);

/* Claims one record not yet stopped whose VM `alive` says is gone. */
bool sbx_registry_claim_dead(struct sbx_registry *reg, bool (*alive)(void *vm), char id[SBX_UUID_STRLEN + 1]);

/* The network beacon (contract §6.4): activity(vm) is the CLOCK_REALTIME ms
 * of the last payload a sandbox's network relayed (0 = none; a time in the
 * future counts as now).  A sandbox moving data is not idle. */
void sbx_registry_note_net_activity(struct sbx_registry *reg, int64_t (*activity)(void *vm));

/* A create in progress (sandbox_registry_view.c): shown to the operator
 * (sbx_registry_rows) from the start of the create until insert_vm, which
 * takes its shape, or creating_end; never by the contract's list. */
int sbx_registry_creating_begin(struct sbx_registry *reg, const char *id, const char *name, const char *image,
				uint32_t cpus, uint32_t memory_mb, bool network, sbx_error_t *err);
void sbx_registry_creating_end(struct sbx_registry *reg, const char *id);
/* The operator's view, creates in progress first: [{sandbox_id, name,
 * image, state ("creating", "running", "pausing", "paused", "resuming",
 * "stopping"), age_secs, idle_secs,
 * cpus, memory_mb, network, exec_in_flight}].  facts(vm, row, ud) adds
 * what the backend knows of a live VM; it runs under the registry's lock
 * (the VM cannot go meanwhile), so it must not block. */
json_t *sbx_registry_rows(struct sbx_registry *reg, void (*facts)(void *vm, json_t *row, void *ud), void *ud);

size_t sbx_registry_count(struct sbx_registry *reg);
/* What max_concurrent_sandboxes is checked against: the records (stopped
 * but unremoved ones too) and the creates holding a reservation. */
size_t sbx_registry_used(struct sbx_registry *reg);
/* {sandboxes: [{sandbox_id, name, image, age_secs, exec_in_progress,
 * exec_in_flight, exec_slots_free, stopped}]}; a paused sandbox's entry
 * (and only its) adds state: "paused". */
json_t *sbx_registry_list(struct sbx_registry *reg, uint32_t cap);

/* Pause and resume (sandbox_registry_pause.c, issue 40).  pause_begin
 * marks a running sandbox `id` pausing, after S002/S004 (stopped) as
 * acquire(), S001 when it is paused already or being paused or resumed,
 * and S400 when `max_paused` sandboxes are paused or being paused, or when
 * their bytes, the snapshots' and its guest's RAM pass `store_bytes` (snapshot_store_mb).
 * Execs in flight then see sbx_registry_pausing() and end; pause_drain
 * waits for them.  pause_end(ok) makes it paused with `bytes` on disk and
 * returns the MiB its VM had committed (given back to the budget by the
 * caller), or (!ok) running again, returning 0.  Both drop the reference
 * pause_begin took.  With `if_idle` (the reaper's pause), a running
 * sandbox the policy no longer says to pause (a call came since the scan)
 * is left alone: NULL without an error. */
struct sbx_sandbox *sbx_registry_pause_begin(struct sbx_registry *reg, const char *id, uint32_t max_paused,
					     uint64_t store_bytes, const struct reap_limits *if_idle,
					     sbx_error_t *err);
void sbx_registry_pause_drain(struct sbx_registry *reg, struct sbx_sandbox *sb);
uint64_t sbx_registry_pause_end(struct sbx_registry *reg, struct sbx_sandbox *sb, bool ok, uint64_t bytes);
/* Whether `sb` is being paused (polled by execs, terminals). */
bool sbx_registry_pausing(struct sbx_registry *reg, const struct sbx_sandbox *sb);
/* resume_begin waits while `id` is being paused or resumed, then: S002,
 * S004 (stopped) as acquire(); a running sandbox returns NULL with *running
 * true (no error); a paused one is marked resuming (S400 when
 * `max_running` sandboxes already run: max_concurrent_sandboxes) and
 * returned with *need_mib, the budget its resume must take.  resume_end(ok)
 * makes it running with need_mib committed, or (!ok) leaves it paused; it
 * drops the reference and wakes the waiters. */
struct sbx_sandbox *sbx_registry_resume_begin(struct sbx_registry *reg, const char *id, uint32_t max_running,
					      bool *running, uint64_t *need_mib, sbx_error_t *err);
void sbx_registry_resume_end(struct sbx_registry *reg, struct sbx_sandbox *sb, bool ok);
/* Whether the VM of `sb` is paused or being paused or resumed (stopped or
 * not): a signal sent to one of its processes would wait for a resume. */
bool sbx_registry_vm_paused(struct sbx_registry *reg, const struct sbx_sandbox *sb);
/* Whether `id` is paused, or being paused or resumed (and not stopped). */
bool sbx_registry_is_paused(struct sbx_registry *reg, const char *id);
/* For the stop of `id` (claimed stopped): waits while it is being paused,
 * resumed or captured, then returns its VM when it is paused (calls may wait on it
 * for a resume that will not come), else NULL.  The VM stays the record's
 * until sbx_registry_detach. */
void *sbx_registry_paused_vm(struct sbx_registry *reg, const char *id);
/* Whether `sb` was stopped while paused: a call that failed on it failed
 * for the stop. */
bool sbx_registry_stopped_paused(struct sbx_registry *reg, const struct sbx_sandbox *sb);
/* Paused sandboxes that outlive the daemon (sandbox_registry_adopt.c).
 * insert_paused adds a paused record made from `from` (its id, name, image,
 * shape, clocks, bytes, the budget its resume takes; ports taken) owning
 * `vm`: S001 when the id is taken.  Returns it with a reference for the
 * caller (sbx_registry_release).  hold_fs is fs_begin's hold on a record
 * whatever its state (an adopted background process's pump).  set_kept
 * marks a paused record kept; is_kept: `id` is paused and kept. */
struct sbx_sandbox *sbx_registry_insert_paused(struct sbx_registry *reg, const struct sbx_sandbox *from, void *vm,
					       sbx_error_t *err);
void sbx_registry_hold_fs(struct sbx_registry *reg, struct sbx_sandbox *sb);
void sbx_registry_set_kept(struct sbx_registry *reg, struct sbx_sandbox *sb);
bool sbx_registry_is_kept(struct sbx_registry *reg, const char *id);
/* Paused sandboxes now and their bytes on disk together. */
size_t sbx_registry_paused(struct sbx_registry *reg, uint64_t *bytes);
/* Copies to ids (up to cap) the running sandboxes (a VM, not paused nor
 * being paused or resumed, not stopped); returns the count. */
size_t sbx_registry_running_ids(struct sbx_registry *reg, char (*ids)[SBX_UUID_STRLEN + 1], size_t cap);
/* Snapshots (sandbox_registry_snapshot.c, issue 39).  capture_begin
 * marks a running sandbox `id` as being captured, after S002/S004 as
 * acquire() and S001 when it is paused, being paused or resumed, or
 * captured already; pause_begin refuses it meanwhile (S001).  Calls go on
 * (its VM holds them while it stands still).  capture_end drops the
 * reference capture_begin took.  from_snapshot counts the sandboxes (not
 * stopped) created from snapshot `sid` (their records say so:
 * pause/pause_record.h, kept across restarts). */
struct sbx_sandbox *sbx_registry_capture_begin(struct sbx_registry *reg, const char *id, sbx_error_t *err);
void sbx_registry_capture_end(struct sbx_registry *reg, struct sbx_sandbox *sb);
size_t sbx_registry_from_snapshot(struct sbx_registry *reg, const char *sid);
/* What the snapshots hold on disk together, counted by pause_begin
 * against snapshot_store_mb beside the paused sandboxes' state. */
void sbx_registry_set_snapshot_bytes(struct sbx_registry *reg, uint64_t bytes);

#endif
