#include "adapter/process/process_pump.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>

#include "common/clock.h"
#include "common/log.h"

#define PUMP_CHUNK 65536
#define PUMP_STDIN_SLICE_MS 20 /* a write waits at most this for the guest's window */
#define PUMP_EXIT_WAIT_MS 5000 /* for the exit status once the output ended */

struct pump {
	struct sbx_registry *reg;
	struct sbx_sandbox *sb;
	struct bg_proc *p;
	uint8_t *in;
	size_t in_len, in_off;
	bool keep_alive;
};

static bool timed_out(sbx_error_t e)
{
	return e != NULL && e->errnum == ETIMEDOUT;
}

/* Feeds stdin a slice at a time between reads; closes it once all went
 * (or the process stopped taking it). */
static void feed(struct pump *u, void *h)
{
	const struct sbx_backend_ops *ops = u->p->ops;
	sbx_error_t e = NULL;
	ssize_t n = u->in_off < u->in_len ? ops->proc_write(h, u->in + u->in_off, u->in_len - u->in_off,
							     sbx_now_ms() + PUMP_STDIN_SLICE_MS, &e)
					  : 0;
	if (n > 0)
		u->in_off += (size_t)n;
	bool done = u->in_off >= u->in_len || (n < 0 && !timed_out(e));
	sbx_error_free(&e);
	if (!done)
		return;
	if (ops->proc_close_stdin(h, &e) < 0)
		sbx_error_free(&e);
	free(u->in);
	u->in = NULL;
}

/* Reads until the process ends or the sandbox stops; returns its exit
 * status, -1 when unknown. */
static int drain(struct pump *u, void *h)
{
	const struct sbx_backend_ops *ops = u->p->ops;
	uint8_t *chunk = malloc(PUMP_CHUNK);
	int code = -1;
	int64_t touched = 0;
	for (;;) {
		sbx_error_t e = NULL;
		/* A paused VM takes no signal until a resume that will not come:
		 * its stop ends the process with it. */
		if (sbx_registry_stopped(u->reg, u->sb) && sbx_registry_vm_paused(u->reg, u->sb))
			break;
		if (sbx_registry_stopped(u->reg, u->sb)) {
			if (ops->proc_signal(h, SIGKILL, &e) < 0)
				sbx_error_free(&e);
			if (ops->proc_wait(h, sbx_now_ms() + PUMP_EXIT_WAIT_MS, &code, &e) < 0) {
				sbx_error_free(&e);
				code = -1;
			}
			break;
		}
		if (u->keep_alive && sbx_now_ms() - touched >= PUMP_POLL_MS) {
			sbx_registry_touch(u->reg, u->sb);
			touched = sbx_now_ms();
		}
		if (u->in != NULL)
			feed(u, h);
		int fd = 1;
		int64_t wait = u->in != NULL ? PUMP_STDIN_SLICE_MS : PUMP_POLL_MS;
		ssize_t n = chunk != NULL ? ops->proc_read(h, &fd, chunk, PUMP_CHUNK, sbx_now_ms() + wait, &e) : -1;
		if (n > 0) {
			bg_proc_output(u->p, fd, chunk, (size_t)n);
			continue;
		}
		if (n < 0 && timed_out(e)) {
			sbx_error_free(&e);
			continue;
		}
		if (n == 0 && ops->proc_wait(h, sbx_now_ms() + PUMP_EXIT_WAIT_MS, &code, &e) == 0)
			break;
		sbx_warn("background process %s: %s", u->p->id, e != NULL ? sbx_error_msg(e) : "out of memory");
		sbx_error_free(&e);
		code = -1;
		break;
	}
	free(chunk);
	return code;
}

static void *pump_main(void *arg)
{
	struct pump *u = arg;
	struct bg_proc *p = u->p;
	void *h = p->handle;
	int code = drain(u, h);
	bg_proc_exited(p, code);
	pthread_mutex_lock(&p->handle_lock);
	p->handle = NULL;
	pthread_mutex_unlock(&p->handle_lock);
	p->ops->proc_free(h);
	free(u->in);
	sbx_registry_fs_end(u->reg, u->sb);
	bg_proc_unref(p);
	free(u);
	return NULL;
}

int process_pump_start(struct sbx_adapter *a, struct sbx_sandbox *sb, struct bg_proc *p, uint8_t *in, size_t in_len,
		       bool keep_alive, sbx_error_t *err)
{
	struct pump *u = calloc(1, sizeof(*u));
	if (u == NULL)
		return sbx_error_errno(err, ENOMEM, "background process");
	*u = (struct pump){ .reg = a->reg, .sb = sb, .p = p, .in = in, .in_len = in_len, .keep_alive = keep_alive };
	bg_proc_ref(p);
	int rc = pthread_create(&p->pump, NULL, pump_main, u);
	if (rc != 0) {
		bg_proc_unref(p);
		free(u);
		return sbx_error_errno(err, rc, "background process: pthread_create");
	}
	p->has_pump = true;
	return 0;
}
