/* What the sandbox operations need from VMs, as a small table of
 * functions: vm_backend.c implements it with src/vm and src/image, unit
 * tests with a fake, and an adapter without one (the fuzz targets) answers
 * S300 SBX_NO_VM_DETAIL.  Keeps the request logic free of the VM layer. */
#ifndef SBX_ADAPTER_BACKEND_H
#define SBX_ADAPTER_BACKEND_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "adapter/exec_output.h"
#include "common/error.h"

struct sbx_boot_request {
	const char *image;   /* catalog name */
	const char *oci_ref; /* its OCI reference */
	uint32_t cpus, memory_mb;
	json_t *env;         /* create-time "K=V" array, layered over the image's Env */
	char *const *net_args; /* NULL: no network; else the network helper's options */
	const int *publish_fds; /* with net_args: the published ports' listeners (duplicated) */
	size_t n_publish;
};

struct sbx_exec_request {
	char *const *argv;
	char *const *env;          /* layered over the boot env */
	const char *cwd;           /* NULL: the image's WorkingDir, else / */
	const uint8_t *stdin_data; /* NULL: stdin at EOF from the start */
	size_t stdin_len;
	uint64_t timeout_ms;       /* already clamped; 0 times out at once */
	/* Polled a few times a second: true when the sandbox is being stopped
	 * (the exec then ends with S004). */
	bool (*cancelled)(void *ud);
	void *cancel_ud;
	/* Optional: each piece of output as it comes (fd 1 or 2), before the
	 * result's 1 MiB caps (the operator's exec prints it live, a streamed
	 * exec sends it to a channel).  Returns 1 when the piece went
	 * elsewhere and is not kept in the result, 0 to keep it.  It may
	 * block (a channel's backpressure): the output is not read meanwhile,
	 * so the guest's window fills and the process blocks on its pipe. */
	int (*on_output)(void *ud, int fd, const void *data, size_t len);
	void *output_ud;
};

struct sbx_exec_result {
	struct exec_output out, err;
	int exit_code;
	uint64_t duration_ms;
};

/* One process driven by the caller (background processes, terminals):
 * unlike exec, nothing waits for it to end. */
struct sbx_proc_request {
	char *const *argv;
	char *const *env; /* layered over the boot env */
	const char *cwd;  /* NULL: the image's WorkingDir, else / */
	bool with_stdin;  /* false: stdin at EOF from the start */
	/* 0 x 0: pipes; else a pseudo-terminal of that size (1..PROTO_MAX_TTY_DIM
	 * each; stdin carries the keys, stdout the screen). */
	uint16_t rows, cols;
};

/* What the operator's view shows of a VM (control/). */
struct sbx_vm_facts {
	int pid;                 /* QEMU's, -1 when unknown */
	const char *console_log; /* valid while the VM is */
	const char *boot;        /* how and when it booted (the first line of
				    `logs`), valid while the VM is, or NULL */
};

/* What the VM layer tells placement (adapter::info's `capacity`). */
struct sbx_backend_capacity {
	json_t *images_cached; /* new array of the catalog names whose image is stored */
	uint32_t pool_ready;   /* warm-pool VMs parked, waiting for a create */
	bool standby_ready;    /* a standby QEMU waits for its image's next create */
	bool kvm;              /* VMs run under KVM, not TCG */
};

#define SBX_CAPACITY_IMAGES_MAX 64 /* images_cached's bound */

struct sbx_backend_ops {
	/* Ensures the image (S101/S102), boots and waits for the guest (S300
	 * with the console tail). */
	void *(*boot)(void *ctx, const struct sbx_boot_request *req, sbx_error_t *err);
	/* Runs one process to exit: S200 on the deadline (its group killed),
	 * S300 when the guest cannot run it; exit 127/126 are results. */
	int (*exec)(void *vm, const struct sbx_exec_request *req, struct sbx_exec_result *res, sbx_error_t *err);
	/* Writes a file atomically (mode exact, parents created when asked);
	 * a guest failure carries fs::write's S-code (fs/fs_errors.h). */
	int (*write_file)(void *vm, const char *path, uint32_t mode, bool parents, const void *data, size_t len,
			  sbx_error_t *err);
	/* Tears the VM down (short grace, then kill) and removes its files
	 * (a paused VM's state too). */
	void (*stop)(void *vm);
	/* False once the VM is gone (QEMU exited, killed, or its guest
	 * stopped answering); calls on it then fail with S300 naming why.
	 * Cheap and non-blocking.  NULL: always alive. */
	bool (*alive)(void *vm);
	/* CLOCK_REALTIME ms of the last payload its network relayed, 0 = none
	 * (optional). */
	int64_t (*net_activity_ms)(void *vm);
	/* Connections its published ports accepted (delta[0]) and refused
	 * (delta[1]) since the last call (optional; cheap, never blocks). */
	void (*publish_take)(void *vm, uint64_t delta[2]);
	/* MiB the snapshot templates' RAM memfds of this process hold now,
	 * counted in the memory budget (optional). */
	uint64_t (*templates_mib)(void *ctx);
	/* How the VM started, for the log: "pool" (a parked VM), "standby"
	 * (a QEMU started ahead), "restore" (from the image's template) or
	 * "cold" (optional). */
	const char *(*boot_mode)(void *vm);
	/* QEMU's pid and the console log's path (optional; cheap, never
	 * blocks: called under the registry's lock). */
	void (*facts)(void *vm, struct sbx_vm_facts *f);
	/* Fills *c from memory and at most a file's metadata and reads (never
	 * a pull, never VM work: adapter::info answers within 2 s); S-less
	 * failure only when out of memory (optional: NULL reports no images,
	 * no pool, no standby, no KVM). */
	int (*capacity)(void *ctx, struct sbx_backend_capacity *c, sbx_error_t *err);

	/* Pause (optional: NULL answers S300, not supported): the VM's
	 * memory, devices and disk go to `dir` (made by it, files 0600), its
	 * QEMU and helpers exit; the handle and its process handles stay
	 * (their reads wait, writes block within their deadlines).  Fills
	 * *size_bytes (on disk) and *duration_ms.  On failure the VM runs on,
	 * unless alive() then says it is gone. */
	int (*pause)(void *vm, const char *dir, uint64_t *size_bytes, int64_t *duration_ms, int64_t deadline,
		     sbx_error_t *err);
	/* Starts the paused VM again from its state (then removed): the guest's
	 * clock is the host's, its random pool reseeded; its TCP connections
	 * are gone.  On failure the VM is dead (alive() false) and stop()
	 * removes the state. */
	int (*resume)(void *vm, int64_t deadline, sbx_error_t *err);
	/* A paused VM about to be stopped (optional): the calls waiting for
	 * its resume (fs operations, spawns, signals) fail now rather than at
	 * their deadlines.  A running VM is left alone. */
	void (*abort_paused)(void *vm);
	/* Paused sandboxes that outlive the daemon (optional, all or none;
	 * issue 40 item 4).  pause_keep, after a pause: the VM's part of
	 * what a later daemon needs goes beside the state (the state and
	 * scratch disk synced with `sync`), the backend's own
	 * part ({workdir}) to *state for the caller's record.  forget: frees
	 * a paused VM's handle and keeps its state (a daemon that exits;
	 * process handles freed first).  adopt: a handle on the paused VM an
	 * earlier daemon left in `dir`, with `state` as pause_keep gave it
	 * and this daemon's listeners for its published ports (in their
	 * order); errnum EWOULDBLOCK when another daemon holds it, S300 when
	 * this build cannot resume it.  adopted_proc: a process handle (as
	 * proc_start's) on its background process of guest pid `pid`, once;
	 * NULL when it has none.  discard_paused: removes a paused state no
	 * daemon can use (its pause never finished) unless another daemon
	 * holds it; true when removed. */
	int (*pause_keep)(void *vm, bool sync, int64_t deadline, json_t **state, sbx_error_t *err);
	void (*forget)(void *vm);
	void *(*adopt)(void *ctx, const char *dir, json_t *state, const int *publish_fds, size_t n_publish,
		       sbx_error_t *err);
	void *(*adopted_proc)(void *vm, uint32_t pid);
	bool (*discard_paused)(void *ctx, const char *dir);
	/* Snapshots (optional; issue 39).  branch_paused: a second paused
	 * state `to` from the kept one in `from` (pause_keep done), for
	 * sandbox `sandbox_id` to adopt and resume (NULL: a snapshot's); the
	 * two share what neither writes.  Nothing is synced; on failure `to`
	 * is gone. */
	int (*branch_paused)(void *ctx, const char *from, const char *to, const char *sandbox_id, sbx_error_t *err);
	/* Whether adopt could run the paused state in `dir`: 0, or -1 with
	 * why (another QEMU, kernel, boot disk or control protocol). */
	int (*check_paused)(void *ctx, const char *dir, sbx_error_t *err);

	/* Processes the caller drives (optional: NULL proc_start answers
	 * S300).  Started once the guest reported its pid (*pid); S300 when
	 * the guest cannot run it.  A handle is used by one reader and one
	 * writer thread at a time; the others may be called from any thread.
	 * Deadlines are sbx_now_ms() times, -1 for none; a missed one fails
	 * with errnum ETIMEDOUT and may be retried. */
	void *(*proc_start)(void *vm, const struct sbx_proc_request *req, uint32_t *pid, sbx_error_t *err);
	/* Output in arrival order, *fd 1 or 2; 0 once the process exited and
	 * all of it was read. */
	ssize_t (*proc_read)(void *proc, int *fd, void *buf, size_t len, int64_t deadline, sbx_error_t *err);
	/* Up to len bytes of stdin, blocking on the guest's window. */
	ssize_t (*proc_write)(void *proc, const void *buf, size_t len, int64_t deadline, sbx_error_t *err);
	int (*proc_close_stdin)(void *proc, sbx_error_t *err);
	/* To the process's whole group; a process that ended is not an error. */
	int (*proc_signal)(void *proc, int sig, sbx_error_t *err);
	/* Exit status (0-255, 128+signal), discarding output not read yet. */
	int (*proc_wait)(void *proc, int64_t deadline, int *code, sbx_error_t *err);
	/* A terminal's new size. */
	int (*proc_resize)(void *proc, uint16_t rows, uint16_t cols, sbx_error_t *err);
	/* Kills the process if it still runs and frees the handle. */
	void (*proc_free)(void *proc);
};

struct sbx_backend {
	const struct sbx_backend_ops *ops; /* NULL: no VMs in this build */
	void *ctx;
};

#endif
