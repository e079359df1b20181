/* The VM backend's boot: the only place the adapter chooses how a
 * sandbox's VM starts.  A create of the default shape takes a parked VM of
 * the warm pool, else a standby of its image, else starts a VM now (the VM
 * layer restores the image's template when it has one, else boots cold).
 * The warm pool's and the standbys' own VMs are booted here too. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "adapter/mem_budget.h"
#include "image/image_runtime.h"
#include "adapter/sandbox/lang.h"
#include "adapter/vm_backend/vm_backend_internal.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/metrics_families.h"
#include "common/scodes.h"
#include "common/state_dir.h"
#include "image/image_pull.h"

/* How a VM is started: ready for its sandbox, parked for the warm pool
 * (restored, warmed up, before its CONFIG), or as a standby (QEMU
 * launched, its template not loaded yet). */
enum boot_mode { BOOT_READY, BOOT_PARK, BOOT_STANDBY };

/* How long a VM that failed before its guest's first word may take to
 * show that its QEMU exited (only under KVM). */
#define KVM_EXIT_WAIT_MS 2000

/* What a VM takes from its image, whichever way it starts: the image file
 * (pulled when the configuration allows), its runtime config (Env,
 * WorkingDir, User) and the boot env, the image's Env under the request's. */
struct image_identity {
	char *image;
	struct image_runtime rt;
	char **env;
};

static void identity_free(struct image_identity *id)
{
	boot_env_free(id->env);
	image_runtime_free(&id->rt);
	free(id->image);
}

#define cleanup_identity __attribute__((cleanup(identity_free)))

/* *id starts zeroed (cleanup_identity frees it on every path). */
static int identity_load(const struct backend *b, const struct sbx_boot_request *req, struct image_identity *id,
			 sbx_error_t *err)
{
	id->image = sbx_image_ensure(req->image, req->oci_ref, &b->cfg->images, err);
	if (id->image == NULL)
		return -1;
	if (image_runtime_load(id->image, &id->rt, err) < 0) {
		sbx_error_prefix(err, "image %s", req->image);
		sbx_error_default_scode(err, SBX_S_TRANSIENT);
		return -1;
	}
	id->env = boot_env_layer(id->rt.env, req->env, err);
	return id->env != NULL ? 0 : -1;
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

/* A VM whose QEMU died under KVM before its guest said a word: under
 * auto the daemon's decision becomes TCG (vm/accel.h, one warning) and
 * the VM starts again under it. */
static bool tcg_instead(struct backend *b, struct sbx_vm *vm)
{
	char cause[256];
	return sbx_vm_kvm_refused(vm, KVM_EXIT_WAIT_MS, cause, sizeof(cause)) &&
	       sbx_accel_choice_fall_back(b->cfg->accel_in_use, cause);
}

/* A sandbox VM that failed to start. */
static void discard(struct sandbox_vm *s)
{
	if (s->vm != NULL)
		sbx_vm_stop(s->vm, sbx_now_ms() + VM_BACKEND_STOP_MS);
	free(s->image);
	free(s);
}

static void *boot_vm(struct backend *b, const struct sbx_boot_request *req, enum boot_mode mode, sbx_error_t *err)
{
	bool park = mode == BOOT_PARK;
	if (check_free_space(b->cfg->scratch_disk_mb, err) < 0)
		return NULL;
	cleanup_identity struct image_identity id = { 0 };
	if (identity_load(b, req, &id, err) < 0)
		return NULL;
	struct sandbox_vm *s = calloc(1, sizeof(*s));
	if (s == NULL)
		return sbx_error_errno(err, ENOMEM, "sandbox"), NULL;
	s->pause_lock = -1;
	struct sbx_vm_options opt = {
		.cpus = req->cpus,
		.memory_mib = req->memory_mb,
		/* The daemon's decision, not a probe of this VM's own. */
		.accel = sbx_config_accel(b->cfg),
		.image = id.image,
		.env = id.env,
		.user = id.rt.user,
		.krunfw_path = b->cfg->krunfw_path,
		.tcg_cache_mib = b->cfg->tcg_cache_mb,
		.template_cache_mib = b->cfg->template_cache_mb,
		.scratch_mib = b->cfg->scratch_disk_mb,
		.guest_pids_max = b->cfg->max_guest_pids,
		.net_args = req->net_args,
		.publish_fds = req->publish_fds,
		.n_publish = req->n_publish,
		.jail = b->jail,
		.park = park,
		/* The pool's images are catalog names: "python" warms python3. */
		.warm_up = park ? run_lang_lookup(req->image).warm_up : NULL,
		/* The admission's worst case is also the cgroup's limit. */
		.jail_memory_mib = req->memory_mb > 0 ? (unsigned)sbx_config_vm_cost_mib(b->cfg, req->memory_mb,
											  req->cpus)
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
		if ((s->image = strdup(id.image)) == NULL) {
			sbx_error_errno(err, ENOMEM, "sandbox");
			goto fail;
		}
	} else if (sbx_vm_wait_ready(s->vm, sbx_now_ms() + VM_BACKEND_READY_MS, err) < 0) {
		goto fail_boot;
	}
	s->workdir = sbx_steal_ptr(id.rt.workdir);
	/* A boot that saved the template booted cold, then restarted from it. */
	const struct sbx_vm_timings *t = sbx_vm_timings(s->vm);
	s->boot_mode = t->restored && !t->saved ? "restore" : "cold";
	return s;
fail_boot:
	sbx_error_default_scode(err, SBX_S_VM_BOOT);
	if (s->vm != NULL && tcg_instead(b, s->vm)) {
		discard(s);
		/* The decision is TCG now: this boot cannot come back here. */
		sbx_error_free(err);
		return boot_vm(b, req, mode, err);
	}
fail:
	discard(s);
	return NULL;
}

/* A parked VM taken from the pool gets its identity: the image's Env
 * under the create's env, the image's User. */
static int configure_taken(struct backend *b, struct sandbox_vm *s, const struct sbx_boot_request *req,
			   sbx_error_t *err)
{
	cleanup_identity struct image_identity id = { 0 };
	if (identity_load(b, req, &id, err) < 0)
		return -1;
	return sbx_vm_configure(s->vm, id.env, id.rt.user, sbx_now_ms() + VM_BACKEND_READY_MS, err);
}

/* A standby taken for a create: the template is loaded into it, then the
 * image's Env under the create's env and the image's User go with CONFIG.
 * The image must still be the one its QEMU opened. */
static int start_standby(struct backend *b, struct sandbox_vm *s, const struct sbx_boot_request *req,
			 sbx_error_t *err)
{
	cleanup_identity struct image_identity id = { 0 };
	if (identity_load(b, req, &id, err) < 0)
		return -1;
	if (strcmp(id.image, s->image) != 0 || access(s->image, F_OK) < 0)
		return sbx_error_set(err, ESTALE, "the image changed since its QEMU started");
	if (sbx_vm_set_identity(s->vm, id.env, id.rt.user, err) != 0)
		return -1;
	if (sbx_vm_wait_ready(s->vm, sbx_now_ms() + VM_BACKEND_READY_MS, err) != 0)
		return -1;
	s->workdir = sbx_steal_ptr(id.rt.workdir);
	return 0;
}

/* Parked and standby VMs have the default size and no network. */
static bool default_shape(const struct backend *b, const struct sbx_boot_request *req)
{
	return req->net_args == NULL && req->cpus == b->cfg->default_cpus && req->memory_mb == b->cfg->default_memory_mb;
}

/* A VM ready for its create, counted by how it was booted; its log's
 * first line says how and when. */
static struct sandbox_vm *count_ready(struct sandbox_vm *s, int64_t start_ms)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	boot_line_format(s->boot_line, s->boot_mode, sbx_vm_template(s->vm), sbx_vm_timings(s->vm)->saved,
			 (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000);
	sbx_metric_add(&sbx_m_creates, (const char *[]){ s->boot_mode }, 1);
	sbx_metric_observe(&sbx_m_create_seconds, (const char *[]){ s->boot_mode },
			   (double)(sbx_now_ms() - start_ms) / 1000.0);
	return s;
}

void *vm_backend_boot(void *ctx, const struct sbx_boot_request *req, sbx_error_t *err)
{
	int64_t start_ms = sbx_now_ms();
	struct backend *b = ctx;
	bool shaped = default_shape(b, req);
	struct sandbox_vm *s = shaped ? warm_pool_take(b->pool, req->image) : NULL;
	if (s != NULL) {
		sbx_error_t perr = NULL;
		/* The pool's refill follows; a standby would only compete
		 * with this sandbox's first commands for the cores. */
		if (configure_taken(b, s, req, &perr) == 0) {
			s->boot_mode = "pool";
			return count_ready(s, start_ms);
		}
		sbx_warn("warm pool: a parked VM of %s failed (%s); booting another", req->image, sbx_error_msg(perr));
		sbx_error_free(&perr);
		vm_backend_stop(s);
	}
	s = shaped ? standby_take(b->standby, req->image) : NULL;
	if (s != NULL) {
		sbx_error_t serr = NULL;
		if (start_standby(b, s, req, &serr) < 0) {
			sbx_warn("standby: the VM of %s failed (%s); booting another", req->image, sbx_error_msg(serr));
			sbx_error_free(&serr);
			vm_backend_stop(s);
			s = NULL;
		} else {
			s->boot_mode = "standby";
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
	return s != NULL ? count_ready(s, start_ms) : NULL;
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
	vm_backend_stop(vm);
}

void vm_backend_start_pool(void *ctx)
{
	struct backend *b = ctx;
	b->pool = warm_pool_start(b->cfg, park_vm, discard_vm, b);
	if (b->cfg->standby)
		b->standby = standby_start(standby_vm, discard_vm, standby_stale, b);
}
