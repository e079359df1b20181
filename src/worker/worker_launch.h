/* One start of a worker: what its supervisor thread needs, built by
 * worker::start and owned by the thread from then on. */
#ifndef SBX_WORKER_WORKER_LAUNCH_H
#define SBX_WORKER_WORKER_LAUNCH_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "worker/worker_record.h"
#include "worker/worker_table.h"

struct sbx_vm;

#define WORKER_BOOT_MS 120000     /* the guest ready, else S506 */
#define WORKER_STOP_MS 2000       /* guest power-off once its process ended */
#define WORKER_LOG_DIR "logs"
#define WORKER_INSTALLED_MARKER "/var/lib/iii-worker/installed" /* on the data disk */
/* The source stamp of the last copy into /workspace, on the data disk. */
#define WORKER_COPIED_STAMP "/var/lib/iii-worker/copied"

struct worker_launch {
	struct worker_table *t;
	struct worker_live *w;
	struct worker_record rec;
	char dir[4096];    /* the worker's state directory */
	char record_path[4200];
	char **env;        /* the guest's boot environment */
	char **net_args;
	int host_fd;       /* rec.host_path checked at this start (O_PATH) */
	char *config_dir;  /* canonical, or NULL */
	int config_fd;     /* config_dir checked at this start (O_PATH), or -1 */
	uint64_t nofile;   /* III_VM_NOFILE_LIMIT, 0 = the guest's default */
	bool nested_virt;  /* III_VM_NESTED_VIRT asked */
	bool smt;          /* III_VM_HYPERTHREADING asked */
	uint64_t mem_cost; /* committed in the memory budget; given back at the end */
	char source_stamp[65]; /* a path:// source's stamp, "-" when unknown (copy) */
};

void worker_launch_free(struct worker_launch *l);

/* worker_vm.c: boots the VM and waits for its guest (S506 with the console
 * tail when it does not come up). */
struct sbx_vm *worker_vm_boot(const struct worker_launch *l, sbx_error_t *err);

/* worker_config.c: config_dir's files written into the guest. */
int worker_config_copy(const struct worker_launch *l, struct sbx_vm *vm, sbx_error_t *err);
/* One of them: `name` in dirfd, a regular file of at most `max` bytes,
 * opened without following a symlink or blocking on a FIFO; *out
 * malloc'd. */
int worker_config_read(int dirfd, const char *name, size_t max, char **out, size_t *len, sbx_error_t *err);

/* worker_supervise.c: the supervisor thread's body (takes l): boots, runs
 * the steps and the worker process, feeds the logs, stops the VM when the
 * process ends or a stop asks. */
void *worker_supervise(void *l);

#endif
