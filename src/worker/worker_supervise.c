/* A worker's supervisor thread: boots its VM, runs one guest process that
 * prepares /workspace (the path:// copy, setup and install once per data
 * disk) and then execs the worker (scripts.start or the bundle's exec),
 * copies its output into the capped logs, and stops the VM when it ends or
 * a stop asks.  Nothing is restarted. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/scodes.h"
#include "common/strv.h"
#include "net/net_config.h"
#include "vm/vm.h"
#include "worker/log_cap.h"
#include "worker/worker_launch.h"

#define POLL_MS 200       /* how often a running worker looks for a stop */
#define REAP_MS 5000      /* its exit status once its output ended */
#define DEATH_WAIT_MS 2000

/* The guest side, run by sh with the scripts in the environment so nothing
 * is quoted: "$@" is the worker's argv (a bundle's exec), else
 * III_WORKER_START is its sh -c command.  A path:// source is copied into
 * /workspace when its stamp differs from the last copy's (a restart of an
 * unchanged source skips the copy, seconds under TCG); the stamp is
 * dropped before a copy, so one cut short is made again. */
static const char GUEST_SCRIPT[] =
	"set -e\n"
	"mkdir -p /workspace\n"
	"if [ -n \"$III_WORKER_COPY\" ] && [ \"$III_WORKER_COPY\" != \"$(cat " WORKER_COPIED_STAMP " 2>/dev/null)\" ]; then\n"
	"  mkdir -p \"${III_WORKER_MARKER_DIR}\" && rm -f " WORKER_COPIED_STAMP "\n"
	"  cp -a /mnt/host-src/. /workspace/\n"
	"  if [ \"$III_WORKER_COPY\" != - ]; then echo \"$III_WORKER_COPY\" > " WORKER_COPIED_STAMP "; fi\n"
	"fi\n"
	"cd /workspace\n"
	"if [ ! -e " WORKER_INSTALLED_MARKER " ]; then\n"
	"  if [ -n \"$III_WORKER_SETUP\" ]; then sh -c \"$III_WORKER_SETUP\"; fi\n"
	"  if [ -n \"$III_WORKER_INSTALL\" ]; then sh -c \"$III_WORKER_INSTALL\"; fi\n"
	"  mkdir -p \"${III_WORKER_MARKER_DIR}\" && : > " WORKER_INSTALLED_MARKER "\n"
	"fi\n"
	"unset III_WORKER_COPY III_WORKER_SETUP III_WORKER_INSTALL III_WORKER_MARKER_DIR\n"
	"if [ $# -gt 0 ]; then exec \"$@\"; fi\n"
	"s=$III_WORKER_START; unset III_WORKER_START\n"
	"exec sh -c \"$s\"\n";

void worker_launch_free(struct worker_launch *l)
{
	if (l == NULL)
		return;
	worker_record_free(&l->rec);
	sbx_strv_free(l->env);
	net_args_free(l->net_args);
	free(l->config_dir);
	if (l->host_fd >= 0)
		close(l->host_fd);
	if (l->config_fd >= 0)
		close(l->config_fd);
	free(l);
}

static char *kv(const char *k, const char *v)
{
	char *out = NULL;
	return asprintf(&out, "%s=%s", k, v != NULL ? v : "") < 0 ? NULL : out;
}

/* argv: sh -c GUEST_SCRIPT sh [exec...]; env: the steps. */
static int build_process(const struct worker_launch *l, char ***argv, char ***env, sbx_error_t *err)
{
	size_t n = sbx_strv_len(l->rec.exec);
	char **a = calloc(n + 5, sizeof(char *));
	char **e = calloc(6, sizeof(char *));
	bool ok = a != NULL && e != NULL;
	if (ok) {
		a[0] = strdup("sh");
		a[1] = strdup("-c");
		a[2] = strdup(GUEST_SCRIPT);
		a[3] = strdup("iii-worker");
		for (size_t i = 0; i < n; i++)
			a[4 + i] = strdup(l->rec.exec[i]);
		for (size_t i = 0; i < n + 4; i++)
			ok = ok && a[i] != NULL;
		e[0] = kv("III_WORKER_COPY", l->rec.source == WORKER_SOURCE_PATH ? l->source_stamp : "");
		e[1] = kv("III_WORKER_SETUP", l->rec.setup);
		e[2] = kv("III_WORKER_INSTALL", l->rec.install);
		e[3] = kv("III_WORKER_START", l->rec.start);
		e[4] = kv("III_WORKER_MARKER_DIR", "/var/lib/iii-worker");
		for (size_t i = 0; i < 5; i++)
			ok = ok && e[i] != NULL;
	}
	if (!ok) {
		sbx_strv_free(a);
		sbx_strv_free(e);
		return sbx_error_errno(err, ENOMEM, "worker process");
	}
	*argv = a;
	*env = e;
	return 0;
}

struct logs {
	struct log_cap out, err;
	bool open_out, open_err;
};

static void logs_open(const struct worker_launch *l, struct logs *g)
{
	char path[4200];
	sbx_error_t err = NULL;
	snprintf(path, sizeof(path), "%s/" WORKER_LOG_DIR "/stdout.log", l->dir);
	g->open_out = log_cap_open(&g->out, path, LOG_CAP_DEFAULT, &err) == 0;
	if (!g->open_out) {
		sbx_warn("worker %s: %s (its stdout is not kept)", l->rec.worker, sbx_error_msg(err));
		sbx_error_free(&err);
	}
	snprintf(path, sizeof(path), "%s/" WORKER_LOG_DIR "/stderr.log", l->dir);
	g->open_err = log_cap_open(&g->err, path, LOG_CAP_DEFAULT, &err) == 0;
	if (!g->open_err) {
		sbx_warn("worker %s: %s (its stderr is not kept)", l->rec.worker, sbx_error_msg(err));
		sbx_error_free(&err);
	}
}

static void logs_write(const struct worker_launch *l, struct logs *g, int fd, const void *buf, size_t n)
{
	struct log_cap *c = fd == 2 ? &g->err : &g->out;
	if (!(fd == 2 ? g->open_err : g->open_out))
		return;
	sbx_error_t err = NULL;
	if (log_cap_write(c, buf, n, &err) < 0) {
		sbx_warn("worker %s: %s", l->rec.worker, sbx_error_msg(err));
		sbx_error_free(&err);
	}
}

static void logs_close(struct logs *g)
{
	if (g->open_out)
		log_cap_close(&g->out);
	if (g->open_err)
		log_cap_close(&g->err);
}

/* True when a stop asked and its grace is over. */
static bool kill_due(struct worker_launch *l)
{
	pthread_mutex_lock(&l->t->lock);
	bool due = l->w->stop_requested && sbx_now_ms() >= l->w->kill_at;
	pthread_mutex_unlock(&l->t->lock);
	return due;
}

/* Copies the process's output into the logs until it ends (0), a stop's
 * grace is over (1), or the connection to the guest broke (-1). */
static int pump(struct worker_launch *l, struct sbx_vm_proc *p, struct logs *g)
{
	char buf[64 * 1024];
	for (;;) {
		if (kill_due(l))
			return 1;
		int fd;
		sbx_error_t err = NULL;
		ssize_t n = sbx_vm_proc_read(p, &fd, buf, sizeof(buf), sbx_now_ms() + POLL_MS, &err);
		if (n == 0)
			return 0;
		if (n < 0 && err != NULL && err->errnum == ETIMEDOUT) {
			sbx_error_free(&err);
			continue;
		}
		if (n < 0) {
			sbx_debug("worker %s: output: %s", l->rec.worker, sbx_error_msg(err));
			sbx_error_free(&err);
			return -1;
		}
		logs_write(l, g, fd, buf, (size_t)n);
	}
}

/* The end: the VM stopped, the state set, the memory given back. */
static void finish(struct worker_launch *l, struct sbx_vm *vm, enum worker_state s, bool has_exit, int code)
{
	if (vm != NULL)
		sbx_vm_stop(vm, sbx_now_ms() + WORKER_STOP_MS);
	sbx_mem_budget_give(l->t->mem, l->mem_cost);
	pthread_mutex_lock(&l->t->lock);
	struct worker_live *w = l->w;
	if (w->stop_requested && s != WORKER_FAILED)
		s = WORKER_STOPPED;
	w->pid = 0;
	w->has_exit = has_exit;
	w->exit_code = code;
	worker_set_state(l->t, w, s);
	pthread_mutex_unlock(&l->t->lock);
	sbx_info("worker %s %s%s", l->rec.worker, worker_state_name(s),
		 has_exit && s == WORKER_EXITED ? " (its process ended)" : "");
}

/* Runs the worker process to its end; its state and exit code in *s. */
static void run(struct worker_launch *l, struct sbx_vm *vm, enum worker_state *s, bool *has_exit, int *code)
{
	struct logs g = { 0 };
	char **argv = NULL, **env = NULL;
	sbx_error_t err = NULL;
	*s = WORKER_FAILED;
	*has_exit = false;
	logs_open(l, &g);
	if (build_process(l, &argv, &env, &err) < 0)
		goto out;
	struct sbx_vm_proc *p = sbx_vm_spawn(vm, argv, env, "/", false, &err);
	if (p == NULL)
		goto out;
	pthread_mutex_lock(&l->t->lock);
	l->w->proc = p;
	/* A stop that came during the boot ends the process at once. */
	if (l->w->stop_requested) {
		sbx_error_t kerr = NULL;
		if (sbx_vm_proc_kill(p, SIGTERM, &kerr) < 0)
			sbx_error_free(&kerr);
	}
	worker_set_state(l->t, l->w, WORKER_RUNNING);
	pthread_mutex_unlock(&l->t->lock);
	int r = pump(l, p, &g);
	if (r == 0 && sbx_vm_proc_wait(p, sbx_now_ms() + REAP_MS, code, &err) == 0) {
		*s = WORKER_EXITED;
		*has_exit = true;
	} else if (r == 1) {
		*s = WORKER_STOPPED;
	} else if (!sbx_vm_alive(vm)) {
		char cause[256];
		sbx_vm_death_cause(vm, DEATH_WAIT_MS, cause, sizeof(cause));
		sbx_warn("worker %s: %s", l->rec.worker, cause);
	}
	pthread_mutex_lock(&l->t->lock);
	l->w->proc = NULL;
	pthread_mutex_unlock(&l->t->lock);
	sbx_vm_proc_free(p);
out:
	if (err != NULL)
		sbx_warn("worker %s: %s", l->rec.worker, sbx_error_msg(err));
	sbx_error_free(&err);
	sbx_strv_free(argv);
	sbx_strv_free(env);
	logs_close(&g);
}

void *worker_supervise(void *arg)
{
	struct worker_launch *l = arg;
	sbx_error_t err = NULL;
	struct sbx_vm *vm = worker_vm_boot(l, &err);
	if (vm != NULL && worker_config_copy(l, vm, &err) < 0) {
		sbx_error_default_scode(&err, SBX_S_WORKER_BOOT);
		sbx_vm_stop(vm, sbx_now_ms() + WORKER_STOP_MS);
		vm = NULL;
	}
	pthread_mutex_lock(&l->t->lock);
	struct worker_live *w = l->w;
	if (vm == NULL) {
		w->boot_err = err;
		err = NULL;
		worker_set_state(l->t, w, WORKER_FAILED);
	} else {
		w->pid = sbx_vm_pid(vm);
	}
	pthread_mutex_unlock(&l->t->lock);
	enum worker_state s = WORKER_FAILED;
	bool has_exit = false;
	int code = 0;
	if (vm != NULL)
		run(l, vm, &s, &has_exit, &code);
	finish(l, vm, s, has_exit, code);
	worker_launch_free(l);
	return NULL;
}
