/* Snapshot templates of a VM (vm_internal.h, snapshot.h): a cold boot
 * that wins the key's build lock saves the template at HELLO; a later VM
 * restores it and, when QEMU or the guest never answers, boots cold
 * instead. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "vm/disk.h"
#include "vm/kvm_cpu.h"
#include "vm/qmp.h"
#include "vm/template_cache.h"
#include "vm/template_console.h"
#include "vm/template_memfd.h"
#include "vm/tsc.h"
#include "jail/jail.h"
#include "vm/vm_internal.h"

#define SNAPSHOT_SAVE_MS 60000
#define RESTORE_POLL_US 2000

void vm_drop_snapshot_fds(struct sbx_vm *vm)
{
	if (vm->snap_lock >= 0)
		close(vm->snap_lock);
	if (vm->qmp_fd >= 0)
		close(vm->qmp_fd);
	vm->snap_lock = vm->qmp_fd = -1;
}

void vm_keep_monitor(struct sbx_vm *vm, struct qmp *q)
{
	vm_drop_monitor(vm);
	vm->mon = malloc(sizeof(*q));
	if (vm->mon == NULL) {
		/* The VM runs on; it only cannot be paused. */
		sbx_warn("vm: out of memory keeping QEMU's monitor: the VM cannot be paused");
		qmp_close(q);
		return;
	}
	*vm->mon = *q;
}

void vm_drop_monitor(struct sbx_vm *vm)
{
	if (vm->mon != NULL) {
		qmp_close(vm->mon);
		free(vm->mon);
		vm->mon = NULL;
	}
}

/* Starts from the template in `dir`: a copy of its scratch disk, its
 * state, and its sealed RAM memfd when it has one.  A RAM file that
 * changed since the save condemns the template. */
static int restore_from(struct sbx_vm *vm, const char *dir, int *state_fd, sbx_error_t *err)
{
	cleanup_close int ram = -1;
	if (snapshot_ram(dir, vm->snap_key, vm->memory_mib, &ram, err) < 0) {
		snapshot_invalidate(vm->snap_key);
		return -1;
	}
	if (snapshot_restore_files(dir, vm->files[F_SCRATCH], state_fd, err) < 0)
		return -1;
	template_cache_touch(dir);
	/* Without it (out of memory) the log only lacks the template's part. */
	free(vm->log_lead);
	vm->log_lead = template_console_lead(dir, vm->snap_key);
	if (vm->ram_fd >= 0)
		close(vm->ram_fd);
	vm->ram_fd = sbx_steal_fd(ram);
	vm->ram_shared = false;
	vm->restored = true;
	return 0;
}

/* The scratch disk, and how this VM starts: from the key's snapshot when
 * one exists (*state_fd >= 0), else cold, saving the template when this
 * VM wins its build lock (with its RAM in a new memfd when templates
 * are copy-on-write).  Snapshot trouble is logged, never fatal. */
int vm_choose_start(struct sbx_vm *vm, bool use_snapshot, int *state_fd, sbx_error_t *err)
{
	*state_fd = -1;
	sbx_error_t serr = NULL;
	/* Under KVM the guest's CPU is the host's: no fingerprint, no template. */
	char cpu[KVM_CPU_HEX + 1] = "";
	if (use_snapshot && vm->accel == SBX_ACCEL_KVM && kvm_cpu_host(cpu, &serr) < 0)
		use_snapshot = false;
	bool cow = use_snapshot && template_memfd_supported();
	struct snapshot_id id = { vm->qemu, vm->kernel, vm->boot, vm->image, vm->cpus, vm->memory_mib,
				  /* in MHz: measurement noise must not split templates */
				  vm->accel == SBX_ACCEL_TCG ? (sbx_host_tsc_khz() + 500) / 1000 : 0, (int)vm->accel,
				  vm->scratch_bytes, vm->net_args != NULL, cow, cpu };
	char text[SNAPSHOT_KEY_TEXT_MAX];
	if (use_snapshot && snapshot_key(&id, vm->snap_key, text, &serr) == 0) {
		cleanup_free char *dir = snapshot_find(vm->snap_key, &serr);
		if (dir != NULL && restore_from(vm, dir, state_fd, &serr) == 0)
			return 0;
		if (dir == NULL && serr == NULL)
			vm->snap_lock = snapshot_lock(vm->snap_key, &serr);
		if (vm->snap_lock >= 0) {
			free(vm->snap_text);
			if ((vm->snap_text = strdup(text)) == NULL)
				vm_drop_snapshot_fds(vm);
		}
		if (vm->snap_lock >= 0 && cow) {
			vm->ram_fd = template_memfd_new(vm->memory_mib, &serr);
			vm->ram_shared = vm->ram_fd >= 0;
			if (vm->ram_fd < 0)
				vm_drop_snapshot_fds(vm);
		}
	}
	if (serr != NULL && serr->errnum != EWOULDBLOCK)
		sbx_warn("vm: snapshot: %s; booting without one", sbx_error_msg(serr));
	sbx_error_free(&serr);
	return disk_scratch_create(vm->files[F_SCRATCH], vm->scratch_bytes, err);
}

/* Ends QEMU and everything of this boot (the keeper removes the VM's
 * files) and makes the VM's files again. */
static int teardown(struct sbx_vm *vm, sbx_error_t *err)
{
	pthread_mutex_lock(&vm->lock);
	keeper_stop(&vm->keeper);
	pthread_mutex_unlock(&vm->lock);
	jail_release(vm->jail);
	vm->jail = NULL;
	net_link_close(&vm->net);
	console_stop(&vm->console);
	console_destroy(&vm->console);
	console_init(&vm->console);
	chan_close(vm->chan);
	vm->chan = NULL;
	vm_drop_monitor(vm);
	vm->keeper.pid = -1;
	vm->keeper.lifeline = -1;
	vm->gone_ms = 0;
	vm_free_files(vm);
	vm_drop_snapshot_fds(vm);
	if (vm->ram_fd >= 0)
		close(vm->ram_fd);
	vm->ram_fd = -1;
	vm->ram_shared = false;
	vm->restored = vm->t.restored = false;
	free(vm->log_lead);
	vm->log_lead = NULL;
	if (vm_make_files(vm, err) < 0) {
		vm_remove_files(vm);
		vm_free_files(vm);
		return -1;
	}
	return 0;
}

/* After teardown: a cold boot of the same VM. */
static int boot_cold(struct sbx_vm *vm, sbx_error_t *err)
{
	if (disk_scratch_create(vm->files[F_SCRATCH], vm->scratch_bytes, err) < 0) {
		vm_remove_files(vm);
		vm_free_files(vm);
		return -1;
	}
	return vm_launch(vm, -1, err);
}

/* After a failed restore: QEMU goes, the template goes, and the same VM
 * boots cold. */
static int cold_restart(struct sbx_vm *vm, sbx_error_t *err)
{
	snapshot_invalidate(vm->snap_key);
	if (teardown(vm, err) < 0)
		return -1;
	return boot_cold(vm, err);
}

/* After teardown: the VM starts from the key's template, as any later VM
 * of the key does. */
static int start_as_clone(struct sbx_vm *vm, sbx_error_t *err)
{
	cleanup_close int state_fd = -1;
	if (vm_choose_start(vm, true, &state_fd, err) < 0) {
		vm_remove_files(vm);
		vm_free_files(vm);
		return -1;
	}
	vm->t.restored = vm->restored;
	return vm_launch(vm, state_fd, err);
}

/* A copy-on-write template VM after its save: it must never run again
 * (it would write the clones' pages), so it goes; then its RAM is sealed
 * and the template published (still under the key's build lock), and the
 * VM starts again from it.  Without a template it boots cold. */
static int finish_cow(struct sbx_vm *vm, char *pending, sbx_error_t *err)
{
	/* Held (only closed at return) until the template is published. */
	__attribute__((unused)) cleanup_close int lock = sbx_steal_fd(vm->snap_lock);
	cleanup_close int ram = sbx_steal_fd(vm->ram_fd);
	vm_drop_snapshot_fds(vm);
	sbx_error_t serr = NULL;
	int64_t t = sbx_now_ms();
	int down = teardown(vm, err);
	bool published = down == 0 && pending != NULL && snapshot_publish(pending, vm->snap_key, ram, &serr) == 0;
	if (published)
		sbx_info("vm: snapshot %.12s RAM sealed and written in %lld ms", vm->snap_key,
			 (long long)(sbx_now_ms() - t));
	if (pending != NULL && down < 0)
		snapshot_remove_dir(pending);
	if (published) {
		vm->t.saved = true;
		template_cache_trim(vm->template_cache_mib);
		template_cache_sweep();
	}
	if (down < 0) {
		sbx_error_free(&serr);
		return -1;
	}
	if (published && start_as_clone(vm, &serr) == 0)
		return 1;
	if (serr != NULL)
		sbx_warn("vm: after the template: %s; booting cold", sbx_error_msg(serr));
	sbx_error_free(&serr);
	if (published)
		return cold_restart(vm, err) < 0 ? -1 : 1;
	return boot_cold(vm, err) < 0 ? -1 : 1;
}

/* The template is saved while the guest waits for CONFIG; a streamed
 * template's VM then goes on (a failed save costs only the template), a
 * copy-on-write template's VM starts again from it. */
int vm_save_template(struct sbx_vm *vm, sbx_error_t *err)
{
	int64_t t = sbx_now_ms();
	struct qmp q;
	sbx_error_t serr = NULL;
	int fd = vm->qmp_fd;
	vm->qmp_fd = -1;
	bool cow = vm->ram_fd >= 0 && vm->ram_shared;
	cleanup_free char *pending = NULL;
	/* The boot's console up to HELLO, for the clones' logs (NULL when
	 * out of memory: the template has none). */
	cleanup_free char *console = malloc(CONSOLE_RING_SIZE + 1);
	if (console != NULL)
		console_text(&vm->console, console, CONSOLE_RING_SIZE);
	int saved = -1;
	if (qmp_open(&q, fd, t + SNAPSHOT_SAVE_MS, &serr) == 0) {
		saved = snapshot_save(&q, vm->snap_key, vm->snap_text, vm->files[F_SCRATCH], console,
				      cow ? &pending : NULL, t + SNAPSHOT_SAVE_MS, &serr);
		if (saved == 0) {
			char key[13];
			snprintf(key, sizeof(key), "%.12s", vm->snap_key);
			struct sbx_log_field f[] = { SBX_LF_STR("event", "template_save"), SBX_LF_STR("template", key),
						     SBX_LF_STR("kind", cow ? "copy-on-write" : "streamed"),
						     SBX_LF_INT("duration_ms", sbx_now_ms() - t) };
			sbx_log_kv(SBX_LOG_INFO, f, "vm: snapshot %s saved in %lld ms%s", key,
				   (long long)(sbx_now_ms() - t), cow ? " (copy-on-write)" : "");
		}
		/* A streamed template's VM goes on: a pause may need it. */
		if (cow)
			qmp_close(&q);
		else
			vm_keep_monitor(vm, &q);
	}
	if (serr != NULL)
		sbx_warn("vm: snapshot not saved: %s", sbx_error_msg(serr));
	sbx_error_free(&serr);
	if (cow)
		return finish_cow(vm, pending, err);
	if (saved == 0) {
		vm->t.saved = true;
		template_cache_trim(vm->template_cache_mib);
		template_cache_sweep();
	}
	vm_drop_snapshot_fds(vm);
	return 0;
}

int vm_wait_loaded(struct sbx_vm *vm, int64_t limit, sbx_error_t *err)
{
	struct qmp q;
	int fd = vm->qmp_fd;
	vm->qmp_fd = -1;
	if (qmp_open(&q, fd, limit, err) < 0)
		return -1;
	char reply[QMP_LINE_MAX];
	int rc = 0;
	/* A clone of a copy-on-write template (-incoming defer): only device
	 * state comes from the file, the RAM is the mapped template. */
	if ((vm->ram_fd >= 0 && !vm->ram_shared) || vm->ram_anon) {
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "{\"execute\": \"migrate-incoming\", \"arguments\": {\"uri\": \"fd:%d\"}}",
			 vm->incoming_at);
		if (qmp_call(&q, SNAPSHOT_IGNORE_SHARED, -1, NULL, 0, limit, err) < 0 ||
		    qmp_call(&q, cmd, -1, NULL, 0, limit, err) < 0)
			rc = -1;
	}
	while (rc == 0 &&
	       (rc = qmp_call(&q, "{\"execute\": \"query-status\"}", -1, reply, sizeof(reply), limit, err)) == 0 &&
	       strstr(reply, "\"status\": \"running\"") == NULL) {
		/* A streamed template was saved stopped, and QEMU restores that. */
		if (strstr(reply, "\"status\": \"paused\"") != NULL) {
			if ((rc = qmp_call(&q, "{\"execute\": \"cont\"}", -1, NULL, 0, limit, err)) < 0)
				break;
			continue;
		}
		if (strstr(reply, "\"status\": \"inmigrate\"") == NULL) {
			rc = sbx_error_set(err, EIO, "QEMU did not load the snapshot: %.200s", reply);
			break;
		}
		if (sbx_now_ms() >= limit) {
			rc = sbx_error_set(err, ETIMEDOUT, "QEMU still loading the snapshot");
			break;
		}
		usleep(RESTORE_POLL_US);
	}
	if (rc == 0)
		vm_keep_monitor(vm, &q);
	else
		qmp_close(&q);
	return rc;
}

/* QEMU loaded the state, the guest took CONFIG and is ready. */
static int try_restored(struct sbx_vm *vm, int64_t deadline, sbx_error_t *err)
{
	int64_t limit = sbx_now_ms() + snapshot_restore_limit_ms(vm->accel == SBX_ACCEL_KVM);
	if (vm_wait_loaded(vm, limit, err) < 0)
		return -1;
	vm->t.loaded = sbx_now_ms() - vm->t0;
	if (vm->park)
		return 0;
	if (vm_send_config(vm, err) < 0)
		return -1;
	return chan_wait_ready(vm->chan, deadline >= 0 && deadline < limit ? deadline : limit, err);
}

/* A restored VM gets CONFIG at once.  If QEMU or the guest never answers
 * (the saved state did not load, or stalls), the template goes whatever
 * the caller's deadline, and the VM boots cold when time is left. */
int vm_restored_ready(struct sbx_vm *vm, int64_t deadline, sbx_error_t *err)
{
	sbx_error_t rerr = NULL;
	if (try_restored(vm, deadline, &rerr) == 0)
		return 1;
	switch (snapshot_after_failed_restore(chan_boot_failed(vm->chan), deadline >= 0 && sbx_now_ms() >= deadline)) {
	case SNAPSHOT_KEEP_AND_FAIL:
		*err = rerr; /* the guest's own verdict */
		return -1;
	case SNAPSHOT_DROP_AND_FAIL:
		sbx_warn("vm: restore from snapshot %.12s failed (%s); template dropped", vm->snap_key,
			 sbx_error_msg(rerr));
		snapshot_invalidate(vm->snap_key);
		*err = rerr;
		return -1;
	case SNAPSHOT_DROP_AND_BOOT_COLD:
		break;
	}
	sbx_warn("vm: restore from snapshot %.12s failed (%s); template dropped, booting cold", vm->snap_key,
		 sbx_error_msg(rerr));
	sbx_error_free(&rerr);
	return cold_restart(vm, err);
}

void vm_check_early_death(struct sbx_vm *vm)
{
	/* A pause ends QEMU on purpose, and a resumed VM's life is not its
	 * template's to answer for. */
	if (vm->pauses > 0)
		return;
	if (!vm->t.restored || vm->t.saved || vm->t.ready == 0 || vm->snap_key[0] == '\0')
		return;
	/* Dated by the death, not by whoever noticed it (the reaper scans
	 * every 10 s, a pool's VM is looked at when claimed): the lost
	 * connection, else QEMU seen gone, else now. */
	int64_t died = vm->chan != NULL ? chan_dead_ms(vm->chan) : 0;
	if (died == 0)
		died = vm->gone_ms != 0 ? vm->gone_ms : sbx_now_ms();
	int64_t lived = died - (vm->t0 + vm->t.ready);
	if (lived >= SNAPSHOT_EARLY_DEATH_MS)
		return;
	sbx_warn("vm: a guest restored from snapshot %.12s died %lld ms after it was ready; template dropped",
		 vm->snap_key, (long long)lived);
	snapshot_invalidate(vm->snap_key);
}
