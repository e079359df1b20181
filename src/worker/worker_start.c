/* worker::start (contract §7.19): boots a prepared worker's VM under a
 * supervisor thread and answers once the guest is up (state `running`, or
 * `starting` while another start boots it), or S506 with the console tail
 * when it did not come up.  A worker already starting or running is
 * answered as it is: never a second VM. */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "adapter/request.h"
#include "adapter/sandbox/env.h"
#include "common/cleanup.h"
#include "common/log.h"
#include "common/scodes.h"
#include "common/state_dir.h"
#include "engine/engine.h"
#include "net/net_config.h"
#include "vm/vm.h"
#include "worker/worker_env.h"
#include "worker/worker_launch.h"
#include "worker/worker_ops.h"
#include "worker/worker_record_file.h"
#include "worker/worker_roots.h"
#include "worker/worker_source_stamp.h"

/* III_VM_* (contract §8.1): bad values are ignored silently. */
static bool env_true(const char *name)
{
	const char *v = getenv(name);
	return v != NULL && (strcasecmp(v, "1") == 0 || strcasecmp(v, "true") == 0 || strcasecmp(v, "on") == 0 ||
			     strcasecmp(v, "yes") == 0);
}

static uint64_t env_u64(const char *name)
{
	const char *v = getenv(name);
	if (v == NULL || v[0] < '0' || v[0] > '9')
		return 0;
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	return errno != 0 || *end != '\0' ? 0 : (uint64_t)n;
}

/* What this host cannot honour is said once per daemon, then ignored. */
static void warn_once(atomic_bool *said, const char *what)
{
	if (!atomic_exchange(said, true))
		sbx_warn("%s: ignored for worker VMs on this host", what);
}

/* Nesting and two threads per core are asks: the VM layer grants them
 * under KVM (and SMT where the host has it) and says once why not
 * otherwise (vm/guest_cpu.h). */
static void vm_tuning(struct worker_launch *l)
{
	static atomic_bool shm;
	l->nested_virt = env_true("III_VM_NESTED_VIRT");
	l->smt = env_true("III_VM_HYPERTHREADING");
	if (env_u64("III_VM_VIRTIOFS_SHM_SIZE_MIB") > 0)
		warn_once(&shm, "III_VM_VIRTIOFS_SHM_SIZE_MIB (this QEMU's virtio-fs has no DAX window)");
	l->nofile = env_u64("III_VM_NOFILE_LIMIT");
}

/* The helper's options, with the engine's port open on the gateway when
 * the engine is on the host's loopback. */
static char **net_args(const struct sbx_config *cfg, const char *worker, const char *engine_url, sbx_error_t *err)
{
	char id[WORKER_NAME_MAX + 8];
	snprintf(id, sizeof(id), "worker-%s", worker);
	char **args = net_config_helper_args(&cfg->net, NULL, id, err);
	unsigned port = net_loopback_port(engine_url);
	if (args == NULL || port == 0)
		return args;
	for (size_t i = 0; i < cfg->net.policy.n_host_ports; i++) {
		if (cfg->net.policy.host_ports[i] == port)
			return args;
	}
	size_t n = 0;
	while (args[n] != NULL)
		n++;
	char **more = realloc(args, (n + 3) * sizeof(char *));
	if (more == NULL) {
		net_args_free(args);
		return sbx_error_errno(err, ENOMEM, "network helper arguments"), NULL;
	}
	args = more;
	args[n] = strdup("--host-port");
	args[n + 1] = NULL;
	args[n + 2] = NULL;
	if (args[n] != NULL && asprintf(&args[n + 1], "%u", port) < 0)
		args[n + 1] = NULL;
	if (args[n] == NULL || args[n + 1] == NULL) {
		net_args_free(args);
		return sbx_error_errno(err, ENOMEM, "network helper arguments"), NULL;
	}
	return args;
}

/* config_dir: a directory under the same roots as host_path (S501),
 * pinned: its files are read through *fd after the boot. */
static int config_dir(const char *path, char **out, int *fd, sbx_error_t *err)
{
	bool in_cache;
	if (worker_roots_open(path, out, &in_cache, fd, err) == 0)
		return 0;
	if ((*err)->errnum == ENOTDIR) {
		sbx_error_free(err);
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "config_dir %s is not a directory", path);
	}
	return sbx_error_prefix(err, "config_dir");
}

/* The prepared directory checked again and pinned: what the VM shares is
 * what this start checked, whatever the path is by the time virtiofsd
 * starts. */
static int host_dir(struct worker_launch *l, sbx_error_t *err)
{
	cleanup_free char *canonical = NULL;
	bool in_cache;
	if (worker_roots_open(l->rec.host_path, &canonical, &in_cache, &l->host_fd, err) < 0)
		return sbx_error_prefix(err, "worker %s", l->rec.worker);
	snprintf(l->source_stamp, sizeof(l->source_stamp), "-");
	sbx_error_t serr = NULL;
	if (l->rec.source == WORKER_SOURCE_PATH && worker_source_stamp(l->host_fd, l->source_stamp, &serr) < 0) {
		sbx_debug("worker %s: %s (the source is copied)", l->rec.worker, sbx_error_msg(serr));
		sbx_error_free(&serr);
	}
	return 0;
}

/* Everything the supervisor needs, before any VM or slot is taken. */
static struct worker_launch *launch_new(struct sbx_adapter *a, const char *name, json_t *req, sbx_error_t *err)
{
	struct worker_launch *l = calloc(1, sizeof(*l));
	if (l == NULL)
		return sbx_error_errno(err, ENOMEM, "worker %s", name), NULL;
	l->host_fd = l->config_fd = -1;
	json_t *env;
	const char *url = NULL, *cfg_dir = NULL;
	if (worker_record_load(name, &l->rec, err) < 0) {
		if ((*err)->errnum == ENOENT) {
			sbx_error_free(err);
			sbx_error_scode(err, SBX_S_NOT_PREPARED, "worker %s is not prepared: call worker::prepare first",
					name);
		}
		goto fail;
	}
	if (env_decode(req, "env", &env, err) < 0 || req_string(req, "engine_url", false, &url, err) < 0 ||
	    req_string(req, "config_dir", false, &cfg_dir, err) < 0)
		goto fail;
	if (url == NULL || url[0] == '\0')
		url = engine_default_url();
	if (host_dir(l, err) < 0 || (cfg_dir != NULL && config_dir(cfg_dir, &l->config_dir, &l->config_fd, err) < 0))
		goto fail;
	if (worker_dir(name, l->dir, sizeof(l->dir), err) < 0)
		goto fail;
	snprintf(l->record_path, sizeof(l->record_path), "%s/" WORKER_RECORD_FILE, l->dir);
	char logs[sizeof(l->dir) + 8];
	snprintf(logs, sizeof(logs), "%s/" WORKER_LOG_DIR, l->dir);
	if (sbx_mkdir_p(logs, 0700, err) < 0)
		goto fail;
	struct worker_env_in in = { l->rec.image_env, l->rec.env, env, url, name, l->config_dir != NULL };
	if ((l->env = worker_env_build(&in, err)) == NULL)
		goto fail;
	if ((l->net_args = net_args(a->cfg, name, url, err)) == NULL)
		goto fail;
	vm_tuning(l);
	return l;
fail:
	worker_launch_free(l);
	return NULL;
}

static json_t *answer(struct worker_live *w)
{
	json_t *out = json_pack("{s:s, s:s}", "worker", w->name, "state", worker_state_name(w->state));
	if (out != NULL && w->pid > 0)
		json_object_set_new(out, "pid", json_integer(w->pid));
	return out;
}

int worker_op_start(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *name = json_string_value(json_object_get(req, "worker"));
	struct worker_table *t = a->worker_vms;
	if (t == NULL) {
		sbx_error_scode(&err, SBX_S_VM_BOOT, SBX_NO_VM_DETAIL);
		return sbx_op_fail(&err, out);
	}
	struct worker_launch *l = launch_new(a, name, req, &err);
	if (l == NULL)
		return sbx_op_fail(&err, out);
	pthread_mutex_lock(&t->lock);
	struct worker_live *w = worker_table_get(t, name, &err);
	if (w != NULL) {
		while (w->busy)
			pthread_cond_wait(&t->changed, &t->lock);
	}
	if (w != NULL && !worker_state_active(w->state) && access(l->record_path, F_OK) < 0) {
		/* Destroyed while this start waited. */
		pthread_mutex_unlock(&t->lock);
		worker_launch_free(l);
		sbx_error_scode(&err, SBX_S_NOT_PREPARED, "worker %s is not prepared: call worker::prepare first", name);
		return sbx_op_fail(&err, out);
	}
	if (w == NULL || worker_state_active(w->state)) {
		*out = w != NULL ? answer(w) : NULL;
		pthread_mutex_unlock(&t->lock);
		worker_launch_free(l);
		return w != NULL ? 0 : sbx_op_fail(&err, out);
	}
	/* The last run's thread ended with its process: reap it. */
	worker_stop_locked(t, w, 0);
	uint64_t need = sbx_vm_cost_mib(l->rec.memory_mb, sbx_config_tcg_cache_mib(a->cfg)) + SBX_NET_HELPER_MIB;
	if (sbx_mem_budget_take(t->mem, need, l->rec.memory_mb, &err) < 0) {
		pthread_mutex_unlock(&t->lock);
		worker_launch_free(l);
		return sbx_op_fail(&err, out);
	}
	l->mem_cost = need;
	l->t = t;
	l->w = w;
	sbx_error_free(&w->boot_err);
	w->has_exit = false;
	w->stop_requested = false;
	w->pid = 0;
	w->started_at = (int64_t)time(NULL);
	worker_set_state(t, w, WORKER_STARTING);
	unsigned cpus = l->rec.cpus, memory_mb = l->rec.memory_mb; /* l is the thread's from here on */
	int e = pthread_create(&w->thread, NULL, worker_supervise, l);
	if (e != 0) {
		worker_set_state(t, w, WORKER_PREPARED);
		pthread_mutex_unlock(&t->lock);
		sbx_mem_budget_give(t->mem, need);
		worker_launch_free(l);
		sbx_error_errno(&err, e, "worker %s: supervisor thread", name);
		return sbx_op_fail(&err, out);
	}
	w->thread_live = true;
	sbx_info("worker %s starting (%u cpus, %u MiB)", name, cpus, memory_mb);
	while (w->state == WORKER_STARTING)
		pthread_cond_wait(&t->changed, &t->lock);
	int rc = 0;
	if (w->state == WORKER_FAILED) {
		sbx_error_scode(&err, SBX_S_WORKER_BOOT, "%s",
				w->boot_err != NULL ? sbx_error_msg(w->boot_err)
						    : "the worker VM failed before its process started (see its console.log)");
		rc = -1;
	} else {
		*out = answer(w);
	}
	pthread_mutex_unlock(&t->lock);
	return rc < 0 ? sbx_op_fail(&err, out) : 0;
}
