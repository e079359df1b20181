/* The sandbox lifecycle behind create, exec, run and stop (contract §6,
 * §7.3-7.7): admission and limits here, the VM work through the adapter's
 * backend (backend.h). */
#ifndef SBX_ADAPTER_SANDBOX_H
#define SBX_ADAPTER_SANDBOX_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "adapter/adapter_state.h"
#include "adapter/sandbox/sandbox_ports.h"
#include "common/error.h"
#include "common/uuid.h"

struct sandbox_create_args {
	const char *image;
	bool has_cpus, has_memory, has_idle;
	uint32_t cpus, memory_mb;
	uint64_t idle_timeout_secs;
	const char *name; /* may be NULL */
	bool network;
	json_t *network_rules; /* {allow, deny} narrowing, or NULL */
	json_t *env;      /* as decoded: list, map or NULL */
	struct sandbox_ports ports; /* `ports`; create binds them (host filled in) */
};

/* Checks in contract order, binds the published ports, boots, registers;
 * writes the new id. */
int sandbox_create(struct sbx_adapter *a, struct sandbox_create_args *c, char id[SBX_UUID_STRLEN + 1],
		   sbx_error_t *err);

struct sandbox_exec_args {
	json_t *argv;          /* resolved command: a non-empty string array */
	json_t *env;           /* resolved "K=V" array */
	const char *stdin_b64; /* NULL or "" = immediate EOF */
	const char *workdir;   /* NULL = the image's WorkingDir, else / */
	uint64_t timeout_ms;   /* as requested; clamped here */
	int (*on_output)(void *ud, int fd, const void *data, size_t len); /* optional (backend.h) */
	/* Optional: true once the caller went away; the command is then
	 * killed as a stop would (S004 naming the caller). */
	bool (*caller_gone)(void *ud);
	void *output_ud; /* both's */
	json_t *stream;        /* NULL, or {stdout?, stderr?} writer refs (exec_stream.h) */
};

/* Admits and runs one exec; returns the reply object ({stdout, stderr,
 * exit_code, timed_out, duration_ms, success, stdout_truncated,
 * stderr_truncated}).  When it fails with S200, *printed (unless `printed`
 * is NULL) gets what the command had written by its deadline, for the
 * envelope: {stdout, stderr, stdout_truncated, stderr_truncated}, capped and
 * decoded as a reply's; on any other outcome *printed is NULL. */
json_t *sandbox_exec(struct sbx_adapter *a, const char *id, const struct sandbox_exec_args *x, json_t **printed,
		     sbx_error_t *err);

/* Writes one file in the sandbox (run's files and code), holding an exec
 * slot so a concurrent stop waits for it. */
int sandbox_write_file(struct sbx_adapter *a, const char *id, const char *path, uint32_t mode, const char *data,
		       size_t len, sbx_error_t *err);

/* stop: S002 for an unknown id; a sandbox the reaper already claimed
 * answers success without a second kill. */
int sandbox_stop(struct sbx_adapter *a, const char *id, sbx_error_t *err);
/* stop as run's cleanup: the sandbox leaves the registry now (later calls
 * get S002) and its VM is stopped by the reaper's thread, so the reply
 * need not wait for QEMU to exit.  Its memory is given back only then. */
int sandbox_stop_soon(struct sbx_adapter *a, const char *id, sbx_error_t *err);

/* Whether the VM of `sb` (held by an exec slot or fs hold) is gone. */
bool sandbox_vm_dead(struct sbx_adapter *a, const struct sbx_sandbox *sb);
/* Removes a sandbox whose VM is gone (later calls get S002), unless a stop
 * claimed it already, and logs it. */
void sandbox_remove_dead(struct sbx_adapter *a, const char *id);

/* Why a sandbox stops, as its stop line logs it. */
#define SANDBOX_STOP_CALLER "caller"     /* a stop call */
#define SANDBOX_STOP_RUN "run_done"      /* run's own sandbox, after its exec */
#define SANDBOX_STOP_IDLE "idle"         /* the reaper: idle past its timeout */
#define SANDBOX_STOP_VM_DEATH "vm_death" /* its VM went away by itself */
#define SANDBOX_STOP_SHUTDOWN "shutdown" /* the daemon stops */
#define SANDBOX_STOP_PAUSED_TTL "paused_ttl" /* the reaper: paused past paused_ttl_secs */

/* For a record already claimed stopped, before its detach (which waits
 * for its calls): the calls its paused VM holds for a resume end now,
 * with S004 saying it was stopped. */
void sandbox_abort_paused(struct sbx_adapter *a, const char *id);
/* For a record already claimed stopped: waits for its execs, stops the VM
 * (removing its scratch disk and files) and drops the record. */
void sandbox_teardown(struct sbx_adapter *a, const char *id, const char *reason);
/* The end of a teardown, for a VM already detached from the registry
 * after sbx_mem_budget_release_begin: stops it, ends the release (its
 * memory given back) and logs the stop with its reason. */
void sandbox_release(struct sbx_adapter *a, const char *id, void *vm, uint64_t mem_mib, const char *reason);

#endif
