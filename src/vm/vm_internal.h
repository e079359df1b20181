/* struct sbx_vm and the parts of the VM layer that share it: vm.c (start,
 * wait ready, stop, alive), vm_launch.c (QEMU under its keeper),
 * vm_identity.c (the guest's CONFIG), vm_park.c (parked VMs), vm_host.c (host files: QEMU, the boot disk, the
 * VM's directory), vm_template.c (snapshot templates: save, restore, cold
 * restart), vm_proc.c (process streams), vm_fs.c (fs streams),
 * vm_pause.c and vm_resume.c (pause and resume), vm_save.c and
 * vm_adopt.c (a paused VM handed to a later process), vm_object.c (the
 * object's allocation and release). */
#ifndef SBX_VM_VM_INTERNAL_H
#define SBX_VM_VM_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "vm/channel.h"
#include "vm/console.h"
#include "vm/guest_cpu.h"
#include "vm/keeper.h"
#include "vm/net_link.h"
#include "vm/snapshot.h"
#include "vm/virtiofs.h"
#include "vm/vm.h"

/* Pause and resume (vm_pause.c, vm_resume.c), under vm->lock. */
enum vm_pause_state {
	VM_RUNNING,       /* QEMU runs (or ran: alive says) */
	VM_PAUSING,       /* sbx_vm_pause at work */
	VM_PAUSED,        /* no QEMU: the state is in pause_dir */
	VM_RESUMING,      /* sbx_vm_resume at work */
	VM_RESUME_FAILED, /* dead: pause_error says why; pause_dir is kept */
};

/* The files in the VM's directory that its keeper removes with it (each
 * NULL when the VM has none): the scratch disk, the console and QEMU
 * logs, a private image built from a directory, and the second name of
 * a store image that an adopted VM runs because the store removed or
 * replaced its own (vm_resume.c). */
enum { F_SCRATCH, F_CONSOLE, F_QEMU_LOG, F_IMAGE, F_STORE_IMAGE, VM_N_FILES };

struct sbx_vm {
	char *dir;
	char *files[VM_N_FILES];
	/* What a cold boot after a failed restore needs again. */
	char *qemu, *kernel, *boot, *image;
	enum sbx_accel accel;
	struct guest_cpu cpu;   /* nesting and SMT granted (vm/guest_cpu.h) */
	unsigned cpus, memory_mib, tcg_cache_mib;
	uint64_t scratch_bytes; /* the scratch disk's size: what its writes may take */
	char *data_disk;        /* the caller's disk in place of the scratch disk, or NULL */
	int data_lock;          /* its flock while the VM lives, -1 = none */
	char *console_log;      /* the caller's console log, or NULL */
	struct virtiofs fs;     /* virtio-fs shares */
	bool boot_log;
	bool park;              /* no CONFIG until sbx_vm_configure */
	bool restored;          /* started from a snapshot: no HELLO comes */
	char snap_key[SNAPSHOT_KEY_LEN + 1];
	int snap_lock;          /* >= 0: this boot saves the key's template */
	int qmp_fd;             /* our end of the monitor, -1 = none */
	struct qmp *mon;        /* the monitor once opened (a restore, a save,
				   a pause), kept for the next pause; NULL = none */
	int ctl_next;           /* a resume's new control socket until the
				   channel takes it, -1 = none */
	enum vm_pause_state pause_state;
	char *pause_dir;        /* while paused: the caller's directory */
	unsigned pauses;        /* pauses so far (a planned end of QEMU each) */
	int64_t net_activity_kept; /* the network's last activity before a pause */
	uint64_t publish_kept[2];  /* its published ports' counts not yet taken */
	char pause_error[256];  /* why a resume failed */
	char **retired;         /* console log paths of earlier QEMUs, freed with
				   the VM: a caller may hold one (sbx_vm_console_log) */
	size_t n_retired;
	char *snap_text;        /* the key's text, for the template this VM saves */
	char *log_lead;         /* a restored VM's console log starts with its
				   template's console (vm/template_console.h) */
	uint64_t template_cache_mib; /* the templates' bound (vm/template_cache.h), 0 = none */
	int ram_fd;             /* guest RAM in a template's memfd (vm/template_memfd.h), -1 = anonymous */
	bool ram_shared;        /* this VM writes it: it saves the template */
	bool ram_anon;          /* ram_fd -1, but RAM is a backend object all the
				   same (an adopted template clone, vm_adopt.c) */
	int incoming_at;        /* QEMU's descriptor of the state a clone loads over QMP */
	struct sbx_jail_host *jail_host;
	uint64_t jail_memory_mib;
	struct jail *jail;      /* QEMU's, NULL when unconfined */
	struct keeper keeper;
	char **net_args;        /* NULL = no network */
	int publish[NET_MAX_PUBLISH]; /* the published ports' listeners, closed with the VM */
	size_t n_publish;
	char **warm_up;         /* a parked VM's warm-up argv after `true`, or NULL */
	struct net_link net;
	struct console console;
	struct chan *chan;
	pthread_mutex_t lock; /* keeper state */
	int64_t t0;
	int64_t gone_ms;        /* when the VM was first seen dead (QEMU gone, its
				   connection broken), 0 = not yet */
	char qemu_error[256];   /* the first line of QEMU's error output at a failed start */
	struct sbx_vm_timings t;
	char *hostname;
	char **env;
	char *user;
	uint64_t memory_bytes, nofile;
	unsigned pids_max;
};

/* vm_object.c: an empty VM object (no QEMU, no files, descriptors -1),
 * its published ports' listeners duplicated in, and its release. */
struct sbx_vm *vm_alloc(sbx_error_t *err);
int vm_dup_publish(struct sbx_vm *vm, const int *fds, size_t n, sbx_error_t *err);
void vm_free(struct sbx_vm *vm);
void vm_freep(struct sbx_vm **vm);
#define cleanup_vm __attribute__((cleanup(vm_freep)))

/* vm.c: the accelerator a VM starts under (opt->accel as the caller
 * decided it; AUTO: this process probes) and its cgroup's memory limit
 * under it (opt->jail_memory_mib, else guest RAM + SBX_VM_JAIL_QEMU_MIB +
 * the TCG cache or KVM's own memory). */
int vm_decide_accel(const struct sbx_vm_options *opt, enum sbx_accel *accel, uint64_t *jail_mib, sbx_error_t *err);
/* vm_launch.c: starts QEMU under its keeper for the VM's files
 * (state_fd >= 0: restore that saved state). */
int vm_launch(struct sbx_vm *vm, int state_fd, sbx_error_t *err);
/* vm_identity.c: sends the guest its CONFIG. */
int vm_send_config(struct sbx_vm *vm, sbx_error_t *err);
/* vm_park.c: a parked VM, before it waits: the guest runs `true` and vm->warm_up
 * (proto.h WARM_UP).  Failing costs only the warmth (logged). */
void vm_warm_up(struct sbx_vm *vm, int64_t deadline);

/* vm_host.c */
char *vm_find_qemu(sbx_error_t *err);
/* The boot disk: explicit_path, $SANDBOX_BOOT_DISK, else beside the
 * executable or in its parent directories. */
char *vm_find_boot_disk(const char *explicit_path, sbx_error_t *err);
/* The VM's directory and the paths of its scratch disk and logs. */
int vm_make_files(struct sbx_vm *vm, sbx_error_t *err);
/* Makes the VM's files and sets *image: opt->image, or a private erofs
 * built from it when it is a directory. */
int vm_prepare(struct sbx_vm *vm, const struct sbx_vm_options *opt, char **image, sbx_error_t *err);
/* Before the keeper owns them: remove what start created so far. */
void vm_remove_files(struct sbx_vm *vm);
void vm_free_files(struct sbx_vm *vm);

/* The overlay upper QEMU gets as /dev/vdc: the data disk or the scratch disk. */
const char *vm_upper_disk(const struct sbx_vm *vm);
/* Opens and locks opt->data_disk (a regular file, one VM at a time) and
 * takes its size as the scratch size. */
int vm_open_data_disk(struct sbx_vm *vm, const char *path, sbx_error_t *err);

/* vm_template.c */
/* Creates the scratch disk and chooses how the VM starts: from the key's
 * snapshot when one exists (*state_fd >= 0), else cold, saving the
 * template when this VM wins its build lock. */
int vm_choose_start(struct sbx_vm *vm, bool use_snapshot, int *state_fd, sbx_error_t *err);
/* At HELLO of a VM that holds the build lock: saves the template.  1
 * when the VM was a copy-on-write template VM: it is gone and the VM
 * started again from the template it saved (vm->restored), or cold when
 * that failed; 0 when it goes on; -1 with *err when it could not start
 * again at all. */
int vm_save_template(struct sbx_vm *vm, sbx_error_t *err);
/* A restored VM: 1 once ready, 0 after it fell back to a cold boot (wait
 * for HELLO then), -1 with *err. */
int vm_restored_ready(struct sbx_vm *vm, int64_t deadline, sbx_error_t *err);
void vm_drop_snapshot_fds(struct sbx_vm *vm);
/* Keeps an open monitor for the next pause (taking *q), or closes it
 * when memory is short; vm_drop_monitor closes it (QEMU went). */
void vm_keep_monitor(struct sbx_vm *vm, struct qmp *q);
void vm_drop_monitor(struct sbx_vm *vm);
/* QEMU started with -incoming (a restore, a resume) loads its state
 * (a copy-on-write template's clone: started here over QMP), then runs
 * the VM (`cont` when it was saved stopped); the monitor is kept. */
int vm_wait_loaded(struct sbx_vm *vm, int64_t limit, sbx_error_t *err);
/* A VM restored from a template died on its own (found dead at its stop):
 * within SNAPSHOT_EARLY_DEATH_MS of ready, the template goes.  The death
 * is dated when its control connection was lost (chan_dead_ms), else when
 * QEMU was first seen gone, not when the stop came. */
void vm_check_early_death(struct sbx_vm *vm);

/* vm_pause.c, for vm.c: while a pause or resume runs and while paused
 * the VM is alive (1), after a failed resume dead (0), else -1: ask
 * QEMU and the channel. */
int vm_pause_alive(struct sbx_vm *vm);
/* A resume that failed: its cause, for sbx_vm_death_cause. */
bool vm_pause_death_cause(struct sbx_vm *vm, char *buf, size_t len);
/* sbx_vm_stop of a paused VM (or one whose resume failed): no QEMU to
 * stop, the state goes; true when it was one. */
bool vm_pause_stop(struct sbx_vm *vm);
/* The network's last activity, kept over pauses. */
int64_t vm_pause_net_activity(struct sbx_vm *vm);
bool vm_pause_running(struct sbx_vm *vm);
/* "running", "paused", ...: for messages. */
const char *vm_pause_state_name(enum vm_pause_state s);

#endif
