#include "adapter/host/vm_backend.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "image/image_runtime.h"
#include "adapter/sandbox/lang.h"
#include "adapter/host/standby.h"
#include "adapter/host/warm_pool.h"
#include "adapter/mem_budget.h"
#include "common/cleanup.h"
#include "common/log.h"
#include "common/scodes.h"
#include "common/state_dir.h"
#include "image/image_pull.h"
#include "vm/template_memfd.h"
#include "vm/vm.h"

#define EXEC_POLL_MS 200    /* how often a running exec checks for a stop */
#define EXEC_REAP_MS 5000   /* exit status after the output ended */
#define WRITE_FILE_MS 60000 /* one file of run */
#define DEATH_WAIT_MS 2000  /* QEMU's exit after the guest connection broke */

struct backend {
	const struct sbx_config *cfg;
	struct sbx_jail_host *jail;
	struct warm_pool *pool; /* NULL: no warm_pool */
	struct standby *standby; /* NULL: config standby false */
};

struct sandbox_vm {
	struct sbx_vm *vm;
	char *workdir; /* the image's WorkingDir, or NULL */
	char *image;   /* a standby's image file (gone: the image was removed) */
};

/* How a VM is started: ready for its sandbox, parked for the warm pool
 * (restored, warmed up, before its CONFIG), or as a standby (QEMU
 * launched, its template not loaded yet). */
enum boot_mode { BOOT_READY, BOOT_PARK, BOOT_STANDBY };

void *vm_backend_new(const struct sbx_config *cfg, struct sbx_jail_host *jail, sbx_error_t *err)
{
	struct backend *b = calloc(1, sizeof(*b));
	if (b == NULL) {
		sbx_jail_host_free(jail);
		return sbx_error_errno(err, ENOMEM, "backend"), NULL;
	}
	b->cfg = cfg;
	b->jail = jail;
	return b;
}

void vm_backend_free(void *ctx)
{
	struct backend *b = ctx;
	if (b != NULL) {
		warm_pool_stop(b->pool);
		standby_stop(b->standby);
		sbx_jail_host_free(b->jail);
	}
	free(b);
}

/* A sandbox may fill its whole scratch disk (a sparse file in the state
 * directory): refuse one the host's disk cannot hold, rather than let a
 * guest's writes fail for every sandbox at once. */
static int check_free_space(uint32_t scratch_mib, sbx_error_t *err)
{
	cleanup_free char *dir = sbx_state_subdir("vms", err);
	if (dir == NULL)
		return -1;
	struct statvfs st;
	if (statvfs(dir, &st) < 0)
		return sbx_error_errno(err, errno, "statvfs %s", dir);
	uint64_t free_mib = (uint64_t)st.f_bavail * st.f_frsize >> 20;
	if (free_mib < scratch_mib)
		return sbx_error_scode(err, SBX_S_LIMIT,
				       "the state directory %s has %" PRIu64 " MiB free, less than one sandbox's scratch "
				       "disk (scratch_disk_mb %u): free space there or lower scratch_disk_mb",
				       dir, free_mib, scratch_mib);
	return 0;
}

static void *boot_vm(struct backend *b, const struct sbx_boot_request *req, enum boot_mode mode, sbx_error_t *err)
{
	bool park = mode == BOOT_PARK;
	if (check_free_space(b->cfg->scratch_disk_mb, err) < 0)
		return NULL;
	cleanup_free char *image = sbx_image_ensure(req->image, req->oci_ref, &b->cfg->images, err);
	if (image == NULL)
		return NULL;
	struct image_runtime rt;
	if (image_runtime_load(image, &rt, err) < 0) {
		sbx_error_prefix(err, "image %s", req->image);
		sbx_error_default_scode(err, SBX_S_TRANSIENT);
		return NULL;
	}
	char **env = boot_env_layer(rt.env, req->env, err);
	struct sandbox_vm *s = env != NULL ? calloc(1, sizeof(*s)) : NULL;
	if (s == NULL) {
		if (env != NULL)
			sbx_error_errno(err, ENOMEM, "sandbox");
		goto fail;
	}
	struct sbx_vm_options opt = {
		.cpus = req->cpus,
		.memory_mib = req->memory_mb,
		.accel = b->cfg->accel,
		.image = image,
		.env = env,
		.user = rt.user,
		.krunfw_path = b->cfg->krunfw_path,
		.tcg_cache_mib = b->cfg->tcg_cache_mb,
		.template_cache_mib = b->cfg->template_cache_mb,
		.scratch_mib = b->cfg->scratch_disk_mb,
		.guest_pids_max = b->cfg->max_guest_pids,
		.net_args = req->net_args,
		.jail = b->jail,
		.park = park,
		/* The pool's images are catalog names: "python" warms python3. */
		.warm_up = park ? run_lang_lookup(req->image).warm_up : NULL,
		/* The admission's worst case is also the cgroup's limit. */
		.jail_memory_mib = req->memory_mb > 0 ? (unsigned)sbx_vm_cost_mib(req->memory_mb,
										   sbx_config_tcg_cache_mib(b->cfg))
						      : 0,
	};
	s->vm = sbx_vm_start(&opt, err);
	if (s->vm == NULL)
		goto fail_boot;
	if (mode == BOOT_STANDBY) {
		/* A cold boot (no template yet) would run its guest now. */
		if (!sbx_vm_awaits_template(s->vm)) {
			sbx_error_set(err, EAGAIN, "no template of the image to wait on");
			goto fail;
		}
		if ((s->image = strdup(image)) == NULL) {
			sbx_error_errno(err, ENOMEM, "sandbox");
			goto fail;
		}
	} else if (sbx_vm_wait_ready(s->vm, sbx_now_ms() + VM_BACKEND_READY_MS, err) < 0) {
		goto fail_boot;
	}
	s->workdir = sbx_steal_ptr(rt.workdir);
	boot_env_free(env);
	image_runtime_free(&rt);
	return s;
fail_boot:
	sbx_error_default_scode(err, SBX_S_VM_BOOT);
fail:
	if (s != NULL && s->vm != NULL)
		sbx_vm_stop(s->vm, sbx_now_ms() + VM_BACKEND_STOP_MS);
	if (s != NULL)
		free(s->image);
	free(s);
	boot_env_free(env);
	image_runtime_free(&rt);
	return NULL;
}

/* A parked VM taken from the pool gets its identity: the image's Env
 * under the create's env, the image's User. */
static int configure_taken(struct backend *b, struct sandbox_vm *s, const struct sbx_boot_request *req,
			   sbx_error_t *err)
{
	cleanup_free char *image = sbx_image_ensure(req->image, req->oci_ref, &b->cfg->images, err);
	if (image == NULL)
		return -1;
	struct image_runtime rt;
	if (image_runtime_load(image, &rt, err) < 0)
		return -1;
	char **env = boot_env_layer(rt.env, req->env, err);
	int rc = env != NULL ? sbx_vm_configure(s->vm, env, rt.user, sbx_now_ms() + VM_BACKEND_READY_MS, err) : -1;
	boot_env_free(env);
	image_runtime_free(&rt);
	return rc;
}

/* A standby taken for a create: the template is loaded into it, then the
 * image's Env under the create's env and the image's User go with CONFIG.
 * The image must still be the one its QEMU opened. */
static int start_standby(struct backend *b, struct sandbox_vm *s, const struct sbx_boot_request *req,
			 sbx_error_t *err)
{
	cleanup_free char *image = sbx_image_ensure(req->image, req->oci_ref, &b->cfg->images, err);
	if (image == NULL)
		return -1;
	if (strcmp(image, s->image) != 0 || access(s->image, F_OK) < 0)
		return sbx_error_set(err, ESTALE, "the image changed since its QEMU started");
	struct image_runtime rt;
	if (image_runtime_load(image, &rt, err) < 0)
		return -1;
	char **env = boot_env_layer(rt.env, req->env, err);
	int rc = env != NULL && sbx_vm_set_identity(s->vm, env, rt.user, err) == 0 &&
			 sbx_vm_wait_ready(s->vm, sbx_now_ms() + VM_BACKEND_READY_MS, err) == 0
		 ? 0
		 : -1;
	if (rc == 0)
		s->workdir = sbx_steal_ptr(rt.workdir);
	boot_env_free(env);
	image_runtime_free(&rt);
	return rc;
}

static void stop(void *vm);

/* Parked and standby VMs have the default size and no network. */
static bool default_shape(const struct backend *b, const struct sbx_boot_request *req)
{
	return req->net_args == NULL && req->cpus == b->cfg->default_cpus && req->memory_mb == b->cfg->default_memory_mb;
}

static void *boot(void *ctx, const struct sbx_boot_request *req, sbx_error_t *err)
{
	struct backend *b = ctx;
	bool shaped = default_shape(b, req);
	struct sandbox_vm *s = shaped ? warm_pool_take(b->pool, req->image) : NULL;
	if (s != NULL) {
		sbx_error_t perr = NULL;
		/* The pool's refill follows; a standby would only compete
		 * with this sandbox's first commands for the cores. */
		if (configure_taken(b, s, req, &perr) == 0)
			return s;
		sbx_warn("warm pool: a parked VM of %s failed (%s); booting another", req->image, sbx_error_msg(perr));
		sbx_error_free(&perr);
		stop(s);
	}
	s = shaped ? standby_take(b->standby, req->image) : NULL;
	if (s != NULL) {
		sbx_error_t serr = NULL;
		if (start_standby(b, s, req, &serr) < 0) {
			sbx_warn("standby: the VM of %s failed (%s); booting another", req->image, sbx_error_msg(serr));
			sbx_error_free(&serr);
			stop(s);
			s = NULL;
		}
	}
	if (s == NULL)
		s = boot_vm(b, req, BOOT_READY, err);
	/* The next create of the image finds its QEMU started, when this one
	 * had a template to start from (or saved it). */
	if (s != NULL && shaped) {
		const struct sbx_vm_timings *t = sbx_vm_timings(s->vm);
		if (t->restored || t->saved)
			standby_want(b->standby, req->image, req->oci_ref);
	}
	return s;
}

/* A VM of the default shape booted in the background: the warm pool's
 * or a standby. */
static void *background_vm(struct backend *b, const char *image, const char *ref, enum boot_mode mode)
{
	struct sbx_boot_request req = { .image = image, .oci_ref = ref, .cpus = b->cfg->default_cpus,
					.memory_mb = b->cfg->default_memory_mb };
	sbx_error_t err = NULL;
	void *s = boot_vm(b, &req, mode, &err);
	if (s == NULL && mode == BOOT_PARK)
		sbx_warn("warm pool: %s: %s", image, sbx_error_msg(err));
	else if (s == NULL)
		sbx_info("standby: %s: %s", image, sbx_error_msg(err));
	sbx_error_free(&err);
	return s;
}

static void *park_vm(void *ctx, const char *image, const char *ref)
{
	return background_vm(ctx, image, ref, BOOT_PARK);
}

static void *standby_vm(void *ctx, const char *image, const char *ref)
{
	return background_vm(ctx, image, ref, BOOT_STANDBY);
}

static bool standby_stale(void *ctx, void *vm)
{
	const struct sandbox_vm *s = vm;
	return access(s->image, F_OK) < 0 || !sbx_vm_alive(s->vm);
}

static void discard_vm(void *ctx, void *vm)
{
	stop(vm);
}

void vm_backend_start_pool(void *ctx)
{
	struct backend *b = ctx;
	b->pool = warm_pool_start(b->cfg, park_vm, discard_vm, b);
	if (b->cfg->standby)
		b->standby = standby_start(standby_vm, discard_vm, standby_stale, b);
}

struct sbx_vm *vm_backend_vm(void *sandbox_vm)
{
	return ((struct sandbox_vm *)sandbox_vm)->vm;
}

static bool alive(void *vm)
{
	return sbx_vm_alive(((struct sandbox_vm *)vm)->vm);
}

/* A call that failed because the VM went says so, and why, rather than
 * what broke on the way (a lost connection, a refused spawn). */
static void blame_death(struct sandbox_vm *s, sbx_error_t *err)
{
	if (*err == NULL)
		return;
	if (sbx_vm_alive(s->vm))
		return;
	char cause[256];
	sbx_vm_death_cause(s->vm, DEATH_WAIT_MS, cause, sizeof(cause));
	sbx_error_free(err);
	sbx_error_scode(err, SBX_S_VM_BOOT, "%s", cause);
}

void vm_backend_blame_death(void *sandbox_vm, sbx_error_t *err)
{
	blame_death(sandbox_vm, err);
}

static void stop(void *vm)
{
	struct sandbox_vm *s = vm;
	sbx_vm_stop(s->vm, sbx_now_ms() + VM_BACKEND_STOP_MS);
	free(s->workdir);
	free(s->image);
	free(s);
}

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
		if (exec_output_append(fd == 2 ? &res->err : &res->out, buf, (size_t)n, err) < 0)
			return -1;
	}
}

static int exec_proc(void *vm, const struct sbx_exec_request *req, struct sbx_exec_result *res, sbx_error_t *err)
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
		blame_death(s, err);
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
		blame_death(s, err);
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

static int write_file(void *vm, const char *path, uint32_t mode, bool parents, const void *data, size_t len,
		      sbx_error_t *err)
{
	struct sandbox_vm *s = vm;
	if (sbx_vm_write_file(s->vm, path, mode, parents, data, len, sbx_now_ms() + WRITE_FILE_MS, err) == 0)
		return 0;
	if (!sbx_vm_alive(s->vm)) {
		blame_death(s, err);
		return -1;
	}
	/* The fs S-codes of contract §3 by the guest's errno. */
	int e = (*err)->errnum;
	sbx_error_default_scode(err, e == ENOENT || e == ENOTDIR ? SBX_S_FS_NOT_FOUND
				     : e == EISDIR		  ? SBX_S_FS_WRONG_TYPE
				     : e == EACCES || e == EPERM ? SBX_S_FS_PERMISSION
								  : SBX_S_FS_IO);
	return -1;
}

static int64_t net_activity_ms(void *vm)
{
	return sbx_vm_net_activity_ms(((struct sandbox_vm *)vm)->vm);
}

static uint64_t templates_mib(void *ctx)
{
	return (template_memfd_usage() + (1u << 20) - 1) >> 20;
}

const struct sbx_backend_ops vm_backend_ops = {
	.boot = boot,
	.exec = exec_proc,
	.write_file = write_file,
	.stop = stop,
	.alive = alive,
	.net_activity_ms = net_activity_ms,
	.templates_mib = templates_mib,
};
