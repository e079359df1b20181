/* A terminal's two threads (terminal_internal.h).  The output pump reads
 * the screen (proc_read) into io.screen(), watches for close and `stop`
 * (SIGHUP, then SIGKILL after the grace), and at the end tells io.ended(),
 * leaves the table, frees the process and lets go of the VM.  The input
 * pump feeds io.keys() to the process (proc_write), bumping the sandbox's
 * idle clock, and closes the terminal when the keys broke; it never
 * touches the process once the output pump is done with it. */
#include "adapter/terminal/terminal_internal.h"

#include <errno.h>
#include <signal.h>

#include "adapter/scode.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/scodes.h"

#define PUMP_TICK_MS 200 /* how often a pump looks at close and stop */

static bool timed_out(sbx_error_t *err)
{
	if (*err == NULL || (*err)->errnum != ETIMEDOUT)
		return false;
	sbx_error_free(err);
	return true;
}

static bool is_closing(struct sbx_terminal *term)
{
	pthread_mutex_lock(&term->lock);
	bool c = term->closing;
	pthread_mutex_unlock(&term->lock);
	return c;
}

/* Ends the command once closing: SIGHUP, SIGKILL after the grace.  False
 * when it outlived both by another grace (a wedged guest): give up. */
struct ending {
	int64_t hup_at; /* 0: not sent */
	bool killed;
};

static bool end_step(struct sbx_terminal *term, struct ending *e)
{
	/* A stop or a pause closes the terminal. */
	if (sbx_registry_stopped(term->hold.a->reg, term->hold.sb) ||
	    sbx_registry_pausing(term->hold.a->reg, term->hold.sb)) {
		pthread_mutex_lock(&term->lock);
		term->closing = true;
		pthread_mutex_unlock(&term->lock);
	}
	if (!is_closing(term))
		return true;
	sbx_error_t err = NULL;
	int64_t now = sbx_now_ms();
	if (e->hup_at == 0) {
		e->hup_at = now;
		if (term->ops->proc_signal(term->proc, SIGHUP, &err) < 0)
			sbx_error_free(&err);
	} else if (!e->killed && now - e->hup_at >= SBX_TERMINAL_GRACE_MS) {
		e->killed = true;
		if (term->ops->proc_signal(term->proc, SIGKILL, &err) < 0)
			sbx_error_free(&err);
	} else if (e->killed && now - e->hup_at >= 2 * SBX_TERMINAL_GRACE_MS) {
		return false;
	}
	return true;
}

/* Reads the screen until the command exits; *fail set when it broke. */
static int pump_screen(struct sbx_terminal *term, sbx_error_t *fail)
{
	uint8_t buf[16384];
	struct ending e = { 0 };
	bool caller_gone = false;
	for (;;) {
		if (!end_step(term, &e))
			return sbx_error_scode(fail, SBX_S_VM_BOOT, "the terminal's command did not end after SIGKILL");
		int fd = 1;
		ssize_t n = term->ops->proc_read(term->proc, &fd, buf, sizeof(buf), sbx_now_ms() + PUMP_TICK_MS, fail);
		if (n == 0)
			return 0;
		if (n < 0) {
			if (timed_out(fail))
				continue;
			sbx_error_default_scode(fail, SBX_S_VM_BOOT);
			return -1;
		}
		sbx_error_t serr = NULL;
		if (!caller_gone && term->io.screen(term->io.ud, buf, (size_t)n, &serr) < 0) {
			sbx_debug("terminal %s: the screen's reader is gone (%s): closing", term->id, sbx_error_msg(serr));
			sbx_error_free(&serr);
			caller_gone = true;
			pthread_mutex_lock(&term->lock);
			term->closing = true;
			pthread_mutex_unlock(&term->lock);
		}
	}
}

static void *output_main(void *arg)
{
	struct sbx_terminal *term = arg;
	sbx_error_t fail = NULL;
	int code = -1;
	if (pump_screen(term, &fail) == 0) {
		sbx_error_t werr = NULL;
		if (term->ops->proc_wait(term->proc, sbx_now_ms() + SBX_TERMINAL_GRACE_MS, &code, &werr) < 0) {
			code = -1;
			sbx_error_free(&werr);
		}
	}
	term->io.ended(term->io.ud, code, fail != NULL ? sbx_error_msg(fail) : NULL);
	sbx_error_free(&fail);
	terminal_remove(term);
	pthread_mutex_lock(&term->lock);
	term->closing = true;
	while (term->writing || term->resizing > 0)
		pthread_cond_wait(&term->cond, &term->lock);
	void *proc = term->proc;
	term->proc = NULL;
	pthread_mutex_unlock(&term->lock);
	term->ops->proc_free(proc);
	if (term->io.wake != NULL)
		term->io.wake(term->io.ud);
	/* The last use of the adapter: its teardown waits for this. */
	fs_hold_release(&term->hold);
	pthread_mutex_lock(&term->lock);
	term->out_done = true;
	pthread_cond_broadcast(&term->cond);
	pthread_mutex_unlock(&term->lock);
	terminal_unref(term);
	return NULL;
}

/* Under term->lock: whether the process may still be written to; if so
 * the input pump holds it (writing) until done(). */
static bool begin_write(struct sbx_terminal *term)
{
	pthread_mutex_lock(&term->lock);
	bool ok = !term->closing && term->proc != NULL;
	term->writing = ok;
	pthread_mutex_unlock(&term->lock);
	return ok;
}

static void end_write(struct sbx_terminal *term)
{
	pthread_mutex_lock(&term->lock);
	term->writing = false;
	pthread_cond_broadcast(&term->cond);
	pthread_mutex_unlock(&term->lock);
}

/* Writes all of data, retrying on the guest's window until closing. */
static int write_keys(struct sbx_terminal *term, const uint8_t *data, size_t len)
{
	/* Keys count as activity for the idle reaper. */
	sbx_error_t err = NULL;
	struct sbx_sandbox *sb = sbx_registry_acquire(term->hold.a->reg, term->hold.id, &err);
	if (sb != NULL)
		sbx_registry_release(term->hold.a->reg, sb);
	sbx_error_free(&err);
	size_t off = 0;
	while (off < len) {
		ssize_t w = term->ops->proc_write(term->proc, data + off, len - off, sbx_now_ms() + PUMP_TICK_MS, &err);
		if (w < 0) {
			if (timed_out(&err) && !is_closing(term))
				continue;
			sbx_debug("terminal %s: keys: %s", term->id, sbx_error_msg(err));
			sbx_error_free(&err);
			return -1;
		}
		off += (size_t)w;
	}
	return 0;
}

static void *input_main(void *arg)
{
	struct sbx_terminal *term = arg;
	for (;;) {
		const uint8_t *data = NULL;
		sbx_error_t err = NULL;
		ssize_t n = term->io.keys(term->io.ud, &data, &err);
		if (n < 0) {
			/* The caller's keys broke (it went away): the terminal
			 * closes. */
			sbx_debug("terminal %s: keys: %s: closing", term->id, sbx_error_msg(err));
			sbx_error_free(&err);
			pthread_mutex_lock(&term->lock);
			term->closing = true;
			pthread_mutex_unlock(&term->lock);
			break;
		}
		/* n == 0: no more keys; the command runs on (^D is a key). */
		if (n == 0 || !begin_write(term))
			break;
		int rc = write_keys(term, data, (size_t)n);
		end_write(term);
		if (rc < 0)
			break;
	}
	terminal_unref(term);
	return NULL;
}

static int start_detached(void *(*fn)(void *), struct sbx_terminal *term, sbx_error_t *err)
{
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_mutex_lock(&term->lock);
	term->refs++;
	pthread_mutex_unlock(&term->lock);
	pthread_t th;
	int rc = pthread_create(&th, &attr, fn, term);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		pthread_mutex_lock(&term->lock);
		term->refs--;
		pthread_mutex_unlock(&term->lock);
		return sbx_error_errno(err, rc, "terminal pump");
	}
	return 0;
}

int terminal_pumps_start(struct sbx_terminal *term, sbx_error_t *err)
{
	/* The opener's reference is dropped below: the pumps hold their own. */
	if (start_detached(output_main, term, err) < 0) {
		/* No pump: end it here as the output pump would. */
		terminal_remove(term);
		term->ops->proc_free(term->proc);
		term->proc = NULL;
		fs_hold_release(&term->hold);
		term->io.release = NULL;
		terminal_unref(term);
		return -1;
	}
	if (start_detached(input_main, term, err) < 0) {
		/* Without keys the terminal is no use: the output pump ends it,
		 * and the caller hears why through io.ended(). */
		sbx_warn("terminal %s: %s", term->id, sbx_error_msg(*err));
		sbx_error_free(err);
		pthread_mutex_lock(&term->lock);
		term->closing = true;
		pthread_mutex_unlock(&term->lock);
	}
	terminal_unref(term);
	return 0;
}
