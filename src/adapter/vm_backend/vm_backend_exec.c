/* The VM backend's exec: one command in the sandbox's guest, its stdin fed
 * from a thread of its own, its output drained until it ends, the
 * deadline passes or the sandbox is stopped. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include "adapter/vm_backend/vm_backend_internal.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/scodes.h"

#define EXEC_POLL_MS 200  /* how often a running exec checks for a stop */
#define EXEC_REAP_MS 5000 /* exit status after the output ended */

/* Feeds stdin from its own thread: the guest's window may fill while the
 * process is still producing output the exec thread must drain. */
struct feeder {
	struct sbx_vm_proc *p;
	const uint8_t *data;
	size_t len;
	int64_t deadline;
};

static void *feed_stdin(void *arg)
{
	struct feeder *f = arg;
	sbx_error_t err = NULL;
	size_t off = 0;
	while (off < f->len) {
		ssize_t n = sbx_vm_proc_write(f->p, f->data + off, f->len - off, f->deadline, &err);
		if (n < 0)
			break;
		off += (size_t)n;
	}
	/* A process that stopped reading is not an error of the exec. */
	if (err == NULL)
		sbx_vm_proc_close_stdin(f->p, &err);
	sbx_error_free(&err);
	return NULL;
}

/* Reads output until the process ends; 1 on the deadline, 2 when the
 * sandbox is being stopped. */
static int drain(struct sbx_vm_proc *p, const struct sbx_exec_request *req, int64_t deadline,
		 struct sbx_exec_result *res, sbx_error_t *err)
{
	uint8_t buf[64 * 1024];
	for (;;) {
		int64_t now = sbx_now_ms();
		if (now >= deadline)
			return 1;
		if (req->cancelled != NULL && req->cancelled(req->cancel_ud))
			return 2;
		int64_t slice = now + EXEC_POLL_MS < deadline ? now + EXEC_POLL_MS : deadline;
		int fd;
		sbx_error_t rerr = NULL;
		ssize_t n = sbx_vm_proc_read(p, &fd, buf, sizeof(buf), slice, &rerr);
		if (n == 0)
			return 0;
		if (n < 0 && rerr != NULL && rerr->errnum == ETIMEDOUT) {
			sbx_error_free(&rerr);
			continue;
		}
		if (n < 0) {
			*err = rerr;
			return -1;
		}
		if (req->on_output != NULL && req->on_output(req->output_ud, fd == 2 ? 2 : 1, buf, (size_t)n) == 1)
			continue;
		if (exec_output_append(fd == 2 ? &res->err : &res->out, buf, (size_t)n, err) < 0)
			return -1;
	}
}

int vm_backend_exec(void *vm, const struct sbx_exec_request *req, struct sbx_exec_result *res, sbx_error_t *err)
{
	struct sandbox_vm *s = vm;
	int64_t start = sbx_now_ms();
	int64_t deadline = start + (req->timeout_ms > INT32_MAX ? INT32_MAX : (int64_t)req->timeout_ms);
	if (req->timeout_ms == 0)
		return sbx_error_scode(err, SBX_S_EXEC_TIMEOUT, "exec timed out after 0 ms");
	const char *cwd = req->cwd != NULL ? req->cwd : s->workdir;
	struct sbx_vm_proc *p = sbx_vm_spawn(s->vm, req->argv, req->env, cwd, req->stdin_data != NULL, err);
	if (p == NULL) {
		sbx_error_prefix(err, "shell run");
		sbx_error_default_scode(err, SBX_S_VM_BOOT);
		vm_backend_blame_death(s, err);
		return -1;
	}
	struct feeder f = { p, req->stdin_data, req->stdin_len, deadline };
	pthread_t feeder;
	bool feeding = false;
	int rc = -1;
	if (req->stdin_data != NULL) {
		int e = pthread_create(&feeder, NULL, feed_stdin, &f);
		if (e != 0) {
			sbx_error_errno(err, e, "stdin thread");
			goto out;
		}
		feeding = true;
	}
	int r = drain(p, req, deadline, res, err);
	if (r == 1 || r == 2) {
		sbx_error_t kerr = NULL;
		if (sbx_vm_proc_kill(p, SIGKILL, &kerr) < 0)
			sbx_debug("exec: kill: %s", sbx_error_msg(kerr));
		sbx_error_free(&kerr);
		if (r == 1)
			sbx_error_scode(err, SBX_S_EXEC_TIMEOUT, "exec timed out after %llu ms", (unsigned long long)req->timeout_ms);
		else
			sbx_error_scode(err, SBX_S_STOPPED, "the sandbox was stopped while the command ran");
		goto out;
	}
	if (r < 0 || sbx_vm_proc_wait(p, sbx_now_ms() + EXEC_REAP_MS, &res->exit_code, err) < 0) {
		sbx_error_prefix(err, "shell run");
		sbx_error_default_scode(err, SBX_S_VM_BOOT);
		vm_backend_blame_death(s, err);
		goto out;
	}
	res->duration_ms = (uint64_t)(sbx_now_ms() - start);
	rc = 0;
out:
	/* The feeder ends once the process has: kill it on every failure. */
	if (feeding) {
		sbx_error_t kerr = NULL;
		if (rc < 0 && sbx_vm_proc_kill(p, SIGKILL, &kerr) < 0)
			sbx_debug("exec: kill: %s", sbx_error_msg(kerr));
		sbx_error_free(&kerr);
		pthread_join(feeder, NULL);
	}
	sbx_vm_proc_free(p);
	return rc;
}
