/* The VM interface: the only way the rest of sandbox-libkrun starts and
 * drives microVMs.  Nothing outside src/vm/ knows that QEMU runs them.
 *
 * All functions are thread-safe: many processes may run at once in one VM,
 * each driven from its own thread (one writer and one reader per process).
 * Deadlines are absolute CLOCK_MONOTONIC milliseconds (sbx_now_ms() +
 * timeout, common/clock.h) or -1 for none; a missed one fails with errnum ETIMEDOUT.
 * Errors that mean "the VM did not boot or cannot run" carry S-code S300. */
#ifndef SBX_VM_VM_H
#define SBX_VM_VM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/clock.h"
#include "common/error.h"
#include "jail/jail.h"
#include "proto/proto_msg.h"
#include "vm/accel.h"
#include "vm/vm_share.h"

struct sbx_vm;
struct sbx_vm_proc;

struct sbx_vm_options {
	unsigned cpus;          /* 0 = 1 */
	unsigned memory_mib;    /* 0 = 512 */
	enum sbx_accel accel;   /* KVM or TCG: the caller's decision, taken
				   as is (a daemon's, vm/accel.h); AUTO: this
				   start probes the host (one-shot callers) */
	const char *image;      /* erofs image, or a rootfs directory (turned
				   into a private erofs for this VM) */
	char *const *env;       /* boot environment "K=V", NULL-terminated or NULL */
	const char *hostname;   /* NULL = "sandbox" */
	const char *user;       /* OCI User every process runs as ("name", "uid",
				   "name:group", "uid:gid", ...; NULL or "" =
				   root), resolved by the guest against the
				   image's /etc/passwd and /etc/group; an
				   unknown one fails sbx_vm_wait_ready (S300) */
	uint64_t nofile;        /* RLIMIT_NOFILE in the guest, 0 = keep */
	unsigned tcg_cache_mib; /* TCG translation cache, 0 = SBX_VM_TCG_CACHE_DEFAULT_MIB */
	unsigned scratch_mib;   /* the scratch disk (all the sandbox may write),
				   0 = SBX_SCRATCH_DEFAULT_MIB */
	unsigned guest_pids_max; /* processes one exec may have at once in the
				    guest, 0 = no limit */
	const char *krunfw_path; /* NULL: $SANDBOX_KRUNFW, else the default install */
	const char *boot_disk;  /* NULL: $SANDBOX_BOOT_DISK, else next to the executable */
	bool cold_boot;         /* never start from, nor save, a snapshot
				   (default: restore the image's template
				   when one exists, else save one at HELLO;
				   see vm/snapshot.h) */
	unsigned template_cache_mib; /* the snapshot templates' total bound
				   (least recently used dropped first, see
				   vm/template_cache.h), 0 = none */
	char *const *net_args;  /* NULL: no NIC.  Else eth0 through a network
				   helper (vm/net_link.h) started with these
				   sandbox-net-helper options, NULL-terminated */
	const int *publish_fds; /* with net_args: listening sockets the helper
				   forwards into the guest (its --publish
				   options, in order), duplicated here */
	size_t n_publish;
	struct sbx_jail_host *jail; /* QEMU's jail (jail/jail.h); NULL or
				   inactive: QEMU runs unconfined */
	unsigned jail_memory_mib; /* the jail's memory limit; 0 = memory_mib +
				   SBX_VM_JAIL_QEMU_MIB + the TCG cache, or
				   under KVM sbx_kvm_overhead_mib */
	const struct sbx_vm_share *shares; /* virtio-fs shares (at most
					      SBX_VM_MAX_SHARES = 4, in
					      vm/virtiofs.h), each served by
					      its own virtiofsd
					      (--sandbox=namespace), mounted
					      by the guest before it is
					      ready; imply cold_boot and
					      guest RAM in a shared memfd */
	size_t n_shares;
	const char *data_disk;  /* NULL: a fresh scratch disk, deleted at stop.
				   Else an existing ext4 file (made with
				   disk_scratch_create) used as the overlay
				   upper like the scratch disk and kept at
				   stop; implies cold_boot; one VM at a time
				   (a second one fails to start) */
	const char *console_log; /* NULL: the VM's own directory (deleted at
				    stop).  Else this file, appended to,
				    capped like the default one (vm/console.h)
				    and kept at stop */
	bool park;              /* sbx_vm_wait_ready stops short of CONFIG,
				   once the guest ran its warm-up (proto.h
				   WARM_UP): the guest waits for its identity
				   from sbx_vm_configure (a warm pool's VM; env
				   and user are not looked at until then) */
	char *const *warm_up;   /* with park: after `true`, the guest runs this
				   argv once in its warm-up (the image's
				   interpreter, writing nothing; proto.h
				   WARM_UP bounds it); NULL: `true` only */
	bool nested_virt;       /* KVM: VMX/SVM for the guest (vm/guest_cpu.h);
				   every other VM has neither */
	bool smt;               /* KVM on an SMT host, even cpus: two threads
				   per core */
	bool boot_log;          /* for measuring a boot: kernel messages with
				   their guest timestamps instead of quiet, and
				   every console line copied to stderr prefixed
				   with its arrival in ms since sbx_vm_start */
};

/* Milliseconds since sbx_vm_start was called, for each boot phase (0 =
 * not reached; a VM restored from a snapshot has no hello, and `loaded`,
 * QEMU running the restored state, only a restored VM has); warm_up: how
 * long a parked VM's warm-up took (proto.h WARM_UP). */
struct sbx_vm_timings {
	int64_t kernel, disks, qemu, hello, loaded, ready, warm_up;
	bool restored;
	bool saved; /* this boot saved its template (vm/snapshot.h) */
};

/* A parked VM (sbx_vm_options.park) that is ready to take CONFIG: gets
 * its boot env and user, its clock and fresh entropy (the guest reseeds
 * its CRNG), and waits for the guest's READY.  On failure stop the VM. */
int sbx_vm_configure(struct sbx_vm *vm, char *const *env, const char *user, int64_t deadline, sbx_error_t *err);

/* Replaces the boot env and user of a VM not yet waited for: a standby
 * (QEMU launched, its template not loaded yet) that a create takes before
 * it calls sbx_vm_wait_ready. */
int sbx_vm_set_identity(struct sbx_vm *vm, char *const *env, const char *user, sbx_error_t *err);
/* True when sbx_vm_start launched QEMU for a copy-on-write template that
 * it has not loaded yet: QEMU waits idle (no guest RAM of its own, no
 * vCPU running) until sbx_vm_wait_ready. */
bool sbx_vm_awaits_template(struct sbx_vm *vm);

/* Boots a VM (returns once QEMU runs; the guest boots in the background:
 * a VM restored from a template waits for sbx_vm_wait_ready to load it). */
struct sbx_vm *sbx_vm_start(const struct sbx_vm_options *opt, sbx_error_t *err);
/* Waits for the guest's init to be configured and ready.  On failure the
 * error includes the tail of the guest console. */
int sbx_vm_wait_ready(struct sbx_vm *vm, int64_t deadline, sbx_error_t *err);
int sbx_vm_ping(struct sbx_vm *vm, int64_t deadline, sbx_error_t *err);
/* QEMU's pid (under its keeper), or -1 when it did not start or the VM
 * is paused (a resume starts another). */
pid_t sbx_vm_pid(struct sbx_vm *vm);
/* The file the guest console is logged to (gone after sbx_vm_stop).  A
 * resume moves the VM's own log into a new directory: ask again after
 * sbx_vm_resume (the old pointer stays valid until the stop, its file
 * gone). */
const char *sbx_vm_console_log(struct sbx_vm *vm);
/* The key of the template the VM was restored from or saved (hex,
 * vm/snapshot.h), NULL when it has neither. */
const char *sbx_vm_template(struct sbx_vm *vm);
/* False once QEMU exited or the guest connection broke. */
bool sbx_vm_alive(struct sbx_vm *vm);
/* Why a VM that is not alive went, as a sentence for the caller: "the
 * sandbox's VM was killed by the host's out-of-memory killer", "the
 * sandbox's VM exited: killed by signal 9 (Killed)", ...  Waits up to
 * wait_ms for QEMU to finish exiting after its connection broke. */
void sbx_vm_death_cause(struct sbx_vm *vm, int64_t wait_ms, char *buf, size_t len);
const struct sbx_vm_timings *sbx_vm_timings(struct sbx_vm *vm);
/* After a failed start or sbx_vm_wait_ready: true when QEMU ran under KVM
 * and exited with a failure before the guest's first word (its HELLO),
 * what a host whose KVM cannot run this guest does (kvm-pvm: MSR 0x10a
 * under -cpu host); the first line of QEMU's error output goes to cause.
 * Waits up to wait_ms for QEMU's exit. */
bool sbx_vm_kvm_refused(struct sbx_vm *vm, int64_t wait_ms, char *cause, size_t len);
/* CLOCK_REALTIME ms when the guest's network last relayed payload (TCP
 * data, UDP datagrams, DNS queries); 0 without a network or before any. */
int64_t sbx_vm_net_activity_ms(struct sbx_vm *vm);
/* Connections to the published ports accepted (delta[0]) and refused
 * (delta[1]) since the last call.  Thread-safe. */
void sbx_vm_publish_take(struct sbx_vm *vm, uint64_t delta[2]);
/* Asks the guest to power off, waits until `deadline` at most, then kills
 * QEMU; removes the VM's files and frees vm.  Release every process handle
 * first.  A paused VM's state is removed (and 0 returned: it has no
 * QEMU).  Returns QEMU's exit status (0 after a clean power-off). */
int sbx_vm_stop(struct sbx_vm *vm, int64_t deadline);

/* Pause and resume (issue 40; vm_pause.c, vm_resume.c).  sbx_vm_pause holds the
 * control channel at a frame boundary, waits until the guest has taken
 * every byte sent, stops the vCPUs, migrates memory and device state into
 * `dir` (made here, 0700; every file in it 0600: it holds the guest's
 * memory) beside the scratch disk and console log, and ends QEMU, its
 * helpers (network) and its jail.  The VM object stays: its process
 * handles, their streams and flow-control windows carry on after
 * sbx_vm_resume.  While paused, sbx_vm_alive stays true, reads wait and
 * writes block (within their deadlines).  ENOTSUP for a VM with virtio-fs
 * shares; on any failure before QEMU was ended the VM runs on unchanged.
 * A second pause (or one during a resume) fails with EALREADY (EBUSY),
 * a pause of a VM not ready or not running with EINVAL or EPIPE.  While
 * paused, senders without a deadline (spawns, fs operations, closing
 * stdin, a resize) wait for the resume; a signal (sbx_vm_proc_kill) and
 * a process handle freed meanwhile do not wait (their KILL goes after
 * RESUMED); the VM's own files (its console log, sbx_vm_pid) are those
 * of the next QEMU after the resume.
 * Not while another thread stops the VM. */
struct sbx_vm_pause_info {
	uint64_t size_bytes;  /* what the paused state holds on disk (blocks) */
	int64_t duration_ms;  /* the whole pause */
	int64_t stopped_ms;   /* how long the vCPUs stood still before QEMU ended */
};
int sbx_vm_pause(struct sbx_vm *vm, const char *dir, struct sbx_vm_pause_info *info, int64_t deadline,
		 sbx_error_t *err);
bool sbx_vm_paused(struct sbx_vm *vm);
/* Starts QEMU (and its helpers, its jail) again from the paused state,
 * swaps the channel onto it, and tells the guest (RESUMED) to set its
 * clock to the host's and reseed its random pool before the held writes
 * go out; then removes the state.  TCP connections the guest had are gone
 * (a new network helper), listening sockets listen again.  On failure
 * the VM is dead (sbx_vm_alive false, its cause says why) and its state
 * is kept for sbx_vm_stop to remove.  EINVAL for a VM that is not
 * paused; errors are S300 unless a lower layer named one. */
int sbx_vm_resume(struct sbx_vm *vm, int64_t deadline, sbx_error_t *err);
/* A paused VM (or one whose resume failed) about to be stopped: whoever
 * waits for its resume on the control channel fails now, the error saying
 * `reason`; no resume is possible afterwards.  A VM not paused is left
 * alone.  sbx_vm_stop does this too; calling it first lets the caller wait
 * for those calls before the stop. */
void sbx_vm_pause_abort(struct sbx_vm *vm, const char *reason);

/* A paused VM kept across processes (issue 40: paused sandboxes outlive
 * the daemon; vm_save.c, vm_adopt.c).  sbx_vm_pause_save, after sbx_vm_pause:
 * waits (until `deadline`) for the readers of its process streams to
 * take what the guest sent before the pause, syncs the state and the
 * scratch disk (with `sync`; without, the caller syncs what it keeps of
 * them), then writes PAUSE_VM
 * (vm/pause_dir.h, 0600) into its pause directory: what a later process
 * needs to start it again (QEMU, kernel and boot disk it ran, its shape,
 * network helper arguments, boot identity, the control channel's open
 * process streams and a partly read guest frame); the store image it
 * ran has a second name in the directory (PAUSE_STORE_IMAGE, made by the
 * pause) so that a removal from the image store does not take it; output not taken by the deadline is
 * saved with its stream.  EINVAL when the VM is not paused, ENOTSUP for a
 * VM with a data disk, shares or a console log of the caller's.  Saving
 * may be repeated; the directory stays resumable in this process too.  sbx_vm_forget frees a paused VM's
 * object and keeps its state (a daemon that exits with paused VMs); it
 * fails no caller: release every process handle first, after the save
 * (a handle released while paused only keeps a KILL for a resume in
 * this process, which the forget drops: the guest process lives on, its
 * stream saved; one released before the save is not saved, its KILL is,
 * and goes after the adopting resume).  A VM that is not paused (nor
 * dead after a failed resume) is stopped instead: nothing of it is on
 * disk.  sbx_vm_adopt makes a VM object from a directory saved
 * so (an earlier process's), paused (sbx_vm_paused true), started again
 * by sbx_vm_resume, removed by sbx_vm_stop; `jail` and the published
 * ports' listeners (in the saved order, duplicated here) are this
 * process's, as many as the saved VM had (else EINVAL).  Every failure
 * carries S300 with why (the directory is left as it was); errnum says
 * which: ENOENT no description (or the state gone), EINVAL text that is
 * no description, EBADMSG a damaged or oversized one, EPROTONOSUPPORT
 * another description format or control protocol, ESTALE QEMU, kernel,
 * boot disk or (across file systems) image changed since the pause,
 * gone ones their stat's errno.  sbx_vm_adopted_proc hands out, once
 * each, a handle on the process stream whose guest pid is `pid` (NULL:
 * none): its output goes on after the resume; streams nobody took by the
 * resume are killed then (SIGKILL, after RESUMED). */
int sbx_vm_pause_save(struct sbx_vm *vm, bool sync, int64_t deadline, sbx_error_t *err);
void sbx_vm_forget(struct sbx_vm *vm);
struct sbx_vm_adopt_options {
	struct sbx_jail_host *jail;
	const int *publish_fds;
	size_t n_publish;
	unsigned template_cache_mib;
};
struct sbx_vm *sbx_vm_adopt(const char *dir, const struct sbx_vm_adopt_options *opt, sbx_error_t *err);
/* Whether sbx_vm_adopt could run the paused VM in `dir` (its published
 * ports aside): 0, or -1 with why, errnum as sbx_vm_adopt's. */
int sbx_vm_adopt_check(const char *dir, sbx_error_t *err);
struct sbx_vm_proc *sbx_vm_adopted_proc(struct sbx_vm *vm, uint32_t pid);

/* Processes.  argv[0] is looked up in the guest's PATH; env entries "K=V"
 * are layered over the boot environment; cwd NULL = "/".  With
 * with_stdin false the process's stdin is at EOF. */
struct sbx_vm_proc *sbx_vm_spawn(struct sbx_vm *vm, char *const *argv, char *const *env, const char *cwd,
				 bool with_stdin, sbx_error_t *err);
/* Writes up to len bytes (blocking on flow control); returns the count. */
ssize_t sbx_vm_proc_write(struct sbx_vm_proc *p, const void *buf, size_t len, int64_t deadline,
			  sbx_error_t *err);
int sbx_vm_proc_close_stdin(struct sbx_vm_proc *p, sbx_error_t *err);
/* Output in arrival order: *fd is 1 (stdout) or 2 (stderr).  Returns 0 at
 * the end of the output (the process exited). */
ssize_t sbx_vm_proc_read(struct sbx_vm_proc *p, int *fd, void *buf, size_t len, int64_t deadline,
			 sbx_error_t *err);
/* Sends a signal to the process's group.  Never waits for a pause: while
 * the VM is paused (or being paused) the signal is kept and sent after
 * RESUMED, and 0 returned; a signal already kept for the process is kept
 * once (as the kernel keeps a standard signal pending once).  ENOMEM when
 * it could not be kept; 0 (nothing sent) once the process ended, or its
 * VM died. */
int sbx_vm_proc_kill(struct sbx_vm_proc *p, int sig, sbx_error_t *err);
/* Waits for the exit status (0-255, or 128+signal), discarding output not
 * read yet. */
int sbx_vm_proc_wait(struct sbx_vm_proc *p, int64_t deadline, int *status, sbx_error_t *err);
/* The guest's pid, once the guest reported the fork (it does so even when
 * the exec then fails). */
int sbx_vm_proc_pid(struct sbx_vm_proc *p, int64_t deadline, uint32_t *pid, sbx_error_t *err);
/* A process on a pseudo-terminal of rows x cols (each 1..PROTO_MAX_TTY_DIM,
 * else EINVAL), the controlling terminal of its own session: its stdin
 * carries the keys, stdout the screen (stderr stays empty).  Closing stdin
 * ends the keys, not the terminal: that ends with the process (or a
 * kill). */
struct sbx_vm_proc *sbx_vm_spawn_pty(struct sbx_vm *vm, char *const *argv, char *const *env, const char *cwd,
				     uint16_t rows, uint16_t cols, sbx_error_t *err);
/* Sets a pty process's window size (the guest's kernel sends SIGWINCH to
 * the terminal's foreground process group).  EINVAL for a process without
 * a terminal or a size out of range; 0 (nothing sent) once it ended. */
int sbx_vm_proc_resize(struct sbx_vm_proc *p, uint16_t rows, uint16_t cols, sbx_error_t *err);
/* Kills the process if it still runs, frees the handle. */
void sbx_vm_proc_free(struct sbx_vm_proc *p);

/* Writes a file in the guest (PROTO_FS_WRITE): atomically replaced, `mode`
 * applied exactly, missing parents created (0755) when `parents`.  A
 * guest-side failure keeps the guest's errno (ENOENT for a missing parent)
 * and message. */
int sbx_vm_write_file(struct sbx_vm *vm, const char *path, uint32_t mode, bool parents, const void *data,
		      size_t len, int64_t deadline, sbx_error_t *err);

/* The other filesystem operations (proto.h FS_*), each on its own handle.
 * A failure the guest reports keeps its errno (or PROTO_FS_E* verdict) and
 * message and has no S-code; a guest without the operation fails with
 * S219; a lost connection, a broken or oversized answer and a missed
 * deadline fail with S216 (errnum ETIMEDOUT for the deadline: the call may
 * be repeated with a later one). */
struct sbx_vm_fs;

/* Starts FS_LS, FS_STAT, FS_MKDIR, FS_RM, FS_CHMOD, FS_MV, FS_GREP or
 * FS_SED: req->type and its fields (borrowed). */
struct sbx_vm_fs *sbx_vm_fs_start(struct sbx_vm *vm, const struct proto_msg *req, sbx_error_t *err);
/* The next result batch (FS_ENTRIES, FS_MATCHES, FS_SED_FILES): 1 with
 * *batch (free with proto_msg_free), 0 at the end with *done, -1 failed. */
int sbx_vm_fs_next(struct sbx_vm_fs *op, struct proto_msg *batch, struct proto_fs_done *done, int64_t deadline,
		   sbx_error_t *err);

/* Streaming read: *meta (stat following symlinks) once the guest opened
 * the file, then its bytes under CREDIT flow control, so memory stays flat
 * whatever the file's size.  sbx_vm_fs_read returns >0, 0 at the end of
 * the file, -1 on failure. */
struct sbx_vm_fs *sbx_vm_fs_read_open(struct sbx_vm *vm, const char *path, struct proto_fs_meta *meta,
				      int64_t deadline, sbx_error_t *err);
ssize_t sbx_vm_fs_read(struct sbx_vm_fs *op, void *buf, size_t len, int64_t deadline, sbx_error_t *err);

/* Streaming write (FS_WRITE): push the bytes with sbx_vm_fs_write (all of
 * them, blocking on flow control), then sbx_vm_fs_write_end waits for the
 * guest's verdict.  Freeing the handle before that cancels the write and
 * the guest drops its temp file; the target is never partly replaced. */
struct sbx_vm_fs *sbx_vm_fs_write_open(struct sbx_vm *vm, const char *path, uint32_t mode, bool parents,
				       sbx_error_t *err);
int sbx_vm_fs_write(struct sbx_vm_fs *op, const void *data, size_t len, int64_t deadline, sbx_error_t *err);
int sbx_vm_fs_write_end(struct sbx_vm_fs *op, int64_t deadline, sbx_error_t *err);

/* Cancels the operation if it still runs (the guest answers ECANCELED,
 * unread) and frees the handle. */
void sbx_vm_fs_free(struct sbx_vm_fs *op);

#endif
