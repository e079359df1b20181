/* What the parts of the VM backend share: its context, a sandbox's VM, and
 * the ops that vm_backend.c's table takes from vm_backend_boot.c (boot),
 * vm_backend_exec.c (exec), vm_backend_proc.c (proc_*) and vm_backend_pause.c (pause, resume).  Only files of this folder include it. */
#ifndef SBX_ADAPTER_VM_BACKEND_INTERNAL_H
#define SBX_ADAPTER_VM_BACKEND_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>

#include "adapter/vm_backend/boot_line.h"
#include "adapter/vm_backend/standby.h"
#include "adapter/vm_backend/vm_backend.h"
#include "adapter/vm_backend/warm_pool.h"
#include "vm/vm.h"

/* adapter::info's images_cached (vm_backend_capacity.c): made again when
 * the image index file changes (it is replaced by a rename on every
 * change) or is a few seconds old, so most calls read only its metadata. */
struct images_seen {
	pthread_mutex_t lock;
	char *root;        /* the image store, NULL until the first call */
	bool valid;        /* names is from the index file below */
	struct stat index; /* the index file's when names was made (st_ino 0: none) */
	int64_t made_ms;   /* sbx_now_ms() then */
	json_t *names;
};

struct backend {
	const struct sbx_config *cfg;
	struct sbx_jail_host *jail;
	struct warm_pool *pool; /* NULL: no warm_pool */
	struct standby *standby; /* NULL: config standby false */
	struct images_seen images;
	atomic_int kvm; /* 0 until known, then 1: KVM, 2: TCG */
};

struct sandbox_vm {
	struct sbx_vm *vm;
	char *workdir; /* the image's WorkingDir, or NULL */
	char *image;   /* a standby's image file (gone: the image was removed) */
	const char *boot_mode; /* how it started: "pool", "standby", "restore" or "cold" */
	char boot_line[BOOT_LINE_MAX]; /* the first line of its log, set once it is ready */
	int pause_lock; /* from its pause to its resume or stop: the lock on its
			   paused state (vm_backend_adopt.c), -1 = none */
	char *lock_file; /* that lock's file, removed with the state */
};

/* The ops of the table (backend.h says what each one does). */
void *vm_backend_boot(void *ctx, const struct sbx_boot_request *req, sbx_error_t *err);
int vm_backend_exec(void *vm, const struct sbx_exec_request *req, struct sbx_exec_result *res, sbx_error_t *err);
void vm_backend_stop(void *vm);
int vm_backend_capacity(void *ctx, struct sbx_backend_capacity *c, sbx_error_t *err);
void *vm_backend_proc_start(void *vm, const struct sbx_proc_request *req, uint32_t *pid, sbx_error_t *err);
ssize_t vm_backend_proc_read(void *proc, int *fd, void *buf, size_t len, int64_t deadline, sbx_error_t *err);
ssize_t vm_backend_proc_write(void *proc, const void *buf, size_t len, int64_t deadline, sbx_error_t *err);
int vm_backend_proc_close_stdin(void *proc, sbx_error_t *err);
int vm_backend_proc_signal(void *proc, int sig, sbx_error_t *err);
int vm_backend_proc_wait(void *proc, int64_t deadline, int *code, sbx_error_t *err);
int vm_backend_proc_resize(void *proc, uint16_t rows, uint16_t cols, sbx_error_t *err);
void vm_backend_proc_free(void *proc);
int vm_backend_pause(void *vm, const char *dir, uint64_t *size_bytes, int64_t *duration_ms, int64_t deadline,
		     sbx_error_t *err);
int vm_backend_resume(void *vm, int64_t deadline, sbx_error_t *err);
void vm_backend_abort_paused(void *vm);
int vm_backend_pause_keep(void *vm, bool sync, int64_t deadline, json_t **state, sbx_error_t *err);
void vm_backend_forget(void *vm);
void *vm_backend_adopt(void *ctx, const char *dir, json_t *state, const int *publish_fds, size_t n_publish,
		       sbx_error_t *err);
void *vm_backend_adopted_proc(void *vm, uint32_t pid);
bool vm_backend_discard_paused(void *ctx, const char *dir);
int vm_backend_branch_paused(void *ctx, const char *from, const char *to, const char *sandbox_id, sbx_error_t *err);
int vm_backend_check_paused(void *ctx, const char *dir, sbx_error_t *err);
/* vm_backend_adopt.c: s takes the lock on paused state `dir` (its file
 * dir.lock, made when missing) without waiting; -1 with EWOULDBLOCK when
 * another daemon holds it.  unlock lets it go, the file removed when the
 * state went (`gone`). */
int vm_backend_pause_lock(struct sandbox_vm *s, const char *dir, sbx_error_t *err);
void vm_backend_pause_unlock(struct sandbox_vm *s, bool gone);

#endif
