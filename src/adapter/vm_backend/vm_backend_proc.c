/* The VM backend's processes the caller drives (backend.h proc_*): thin
 * over the VM layer's process handles, with the S-codes of exec for what
 * the guest cannot run. */
#include <errno.h>
#include <stdlib.h>

#include "adapter/vm_backend/vm_backend_internal.h"
#include "common/clock.h"
#include "common/scodes.h"

#define PROC_START_MS 30000 /* the guest's STARTED after SPAWN */

/* A handle remembers its sandbox's VM, to name its death in errors. */
struct proc {
	struct sandbox_vm *s;
	struct sbx_vm_proc *p;
};

/* A failure of the guest or the connection: S300, naming a dead VM. */
static void blame(struct sandbox_vm *s, sbx_error_t *err)
{
	if (*err != NULL && (*err)->errnum == ETIMEDOUT)
		return;
	sbx_error_default_scode(err, SBX_S_VM_BOOT);
	vm_backend_blame_death(s, err);
}

void *vm_backend_proc_start(void *vm, const struct sbx_proc_request *req, uint32_t *pid, sbx_error_t *err)
{
	struct sandbox_vm *s = vm;
	struct proc *h = calloc(1, sizeof(*h));
	if (h == NULL)
		return sbx_error_errno(err, ENOMEM, "process"), NULL;
	h->s = s;
	const char *cwd = req->cwd != NULL ? req->cwd : s->workdir;
	if (req->rows > 0 || req->cols > 0)
		h->p = sbx_vm_spawn_pty(s->vm, req->argv, req->env, cwd, req->rows, req->cols, err);
	else
		h->p = sbx_vm_spawn(s->vm, req->argv, req->env, cwd, req->with_stdin, err);
	if (h->p == NULL || sbx_vm_proc_pid(h->p, sbx_now_ms() + PROC_START_MS, pid, err) < 0) {
		blame(s, err);
		sbx_vm_proc_free(h->p);
		free(h);
		return NULL;
	}
	return h;
}

ssize_t vm_backend_proc_read(void *proc, int *fd, void *buf, size_t len, int64_t deadline, sbx_error_t *err)
{
	struct proc *h = proc;
	ssize_t n = sbx_vm_proc_read(h->p, fd, buf, len, deadline, err);
	if (n < 0)
		blame(h->s, err);
	return n;
}

ssize_t vm_backend_proc_write(void *proc, const void *buf, size_t len, int64_t deadline, sbx_error_t *err)
{
	struct proc *h = proc;
	ssize_t n = sbx_vm_proc_write(h->p, buf, len, deadline, err);
	if (n < 0)
		blame(h->s, err);
	return n;
}

int vm_backend_proc_close_stdin(void *proc, sbx_error_t *err)
{
	struct proc *h = proc;
	return sbx_vm_proc_close_stdin(h->p, err);
}

int vm_backend_proc_signal(void *proc, int sig, sbx_error_t *err)
{
	struct proc *h = proc;
	if (sbx_vm_proc_kill(h->p, sig, err) < 0) {
		blame(h->s, err);
		return -1;
	}
	return 0;
}

int vm_backend_proc_wait(void *proc, int64_t deadline, int *code, sbx_error_t *err)
{
	struct proc *h = proc;
	if (sbx_vm_proc_wait(h->p, deadline, code, err) < 0) {
		blame(h->s, err);
		return -1;
	}
	return 0;
}

int vm_backend_proc_resize(void *proc, uint16_t rows, uint16_t cols, sbx_error_t *err)
{
	struct proc *h = proc;
	if (sbx_vm_proc_resize(h->p, rows, cols, err) < 0) {
		blame(h->s, err);
		return -1;
	}
	return 0;
}

void vm_backend_proc_free(void *proc)
{
	struct proc *h = proc;
	if (h == NULL)
		return;
	sbx_vm_proc_free(h->p);
	free(h);
}

void *vm_backend_adopted_proc(void *vm, uint32_t pid)
{
	struct sandbox_vm *s = vm;
	struct proc *h = calloc(1, sizeof(*h));
	if (h == NULL)
		return NULL;
	h->s = s;
	if ((h->p = sbx_vm_adopted_proc(s->vm, pid)) == NULL) {
		free(h);
		return NULL;
	}
	return h;
}
