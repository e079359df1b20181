/* Pausing a running VM (vm.h sbx_vm_pause) and the paused VM's place in
 * the rest of the VM layer (vm_internal.h vm_pause_*).  The recipe:
 * hold the control channel at a frame boundary until QEMU took every
 * byte sent (channel_pause.c), stop the vCPUs, migrate the state into a
 * file of the caller's directory, keep the files the VM needs beside it
 * (pause_dir.h), then end QEMU, its network helper, its jail and its
 * console.  The guest never sees its connection close; sbx_vm_resume
 * (vm_resume.c) starts a new QEMU from the file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/log.h"
#include "vm/console_ring.h"
#include "vm/pause_dir.h"
#include "vm/qmp.h"
#include "vm/qmp_restart.h"
#include "vm/vm_internal.h"

/* A pause without a deadline still ends: a stuck QEMU fails it. */
#define PAUSE_LIMIT_MS 120000

/* Moves the state from `from` to `to`; else fails with why not. */
static int move_state(struct sbx_vm *vm, enum vm_pause_state from, enum vm_pause_state to, sbx_error_t *err)
{
	pthread_mutex_lock(&vm->lock);
	enum vm_pause_state s = vm->pause_state;
	if (s == from)
		vm->pause_state = to;
	pthread_mutex_unlock(&vm->lock);
	if (s == from)
		return 0;
	if (to == VM_PAUSING && (s == VM_PAUSING || s == VM_PAUSED))
		return sbx_error_set(err, EALREADY, "the VM is already %s", vm_pause_state_name(s));
	if (to == VM_PAUSING && s == VM_RESUMING)
		return sbx_error_set(err, EBUSY, "the VM is being resumed");
	return sbx_error_set(err, s == VM_RESUME_FAILED ? EPIPE : EINVAL, "the VM is %s, not %s", vm_pause_state_name(s),
			     vm_pause_state_name(from));
}

static void set_state(struct sbx_vm *vm, enum vm_pause_state to)
{
	pthread_mutex_lock(&vm->lock);
	vm->pause_state = to;
	pthread_mutex_unlock(&vm->lock);
}

/* QEMU's monitor, opened at its first use. */
static struct qmp *monitor(struct sbx_vm *vm, int64_t limit, sbx_error_t *err)
{
	if (vm->mon != NULL)
		return vm->mon;
	if (vm->qmp_fd < 0) {
		sbx_error_set(err, ENOTSUP, "the VM's QEMU has no monitor");
		return NULL;
	}
	struct qmp q;
	if (qmp_open(&q, sbx_steal_fd(vm->qmp_fd), limit, err) < 0)
		return NULL;
	vm_keep_monitor(vm, &q);
	if (vm->mon == NULL)
		sbx_error_set(err, ENOMEM, "QEMU's monitor");
	return vm->mon;
}

/* A store's image gets a second name beside the state, for a later
 * process (vm_save.c) should the store remove its own meanwhile; made
 * here, while the VM's directory still exists.  Across file systems
 * there is none: the save records the path.  An adopted VM that runs
 * its own second name (F_STORE_IMAGE, vm_resume.c) needs this one: the
 * keeper removes that link with the VM's directory, and the resume
 * links the image back from here. */
static int name_store_image(struct sbx_vm *vm, const char *dir, sbx_error_t *err)
{
	if (pause_dir_link(dir, PAUSE_STORE_IMAGE, vm->image, err) == 0)
		return 0;
	if (vm->files[F_STORE_IMAGE] != NULL)
		return sbx_error_prefix(err, "the image's only name goes with the VM's directory");
	sbx_debug("vm: pause: no second name for the image: %s", sbx_error_msg(*err));
	sbx_error_free(err);
	return 0;
}

/* The files the VM needs again (the keeper deletes its own directory),
 * and its console so far, which leads the next console log. */
static int keep_files(struct sbx_vm *vm, const char *dir, sbx_error_t *err)
{
	/* A data disk is the caller's and stays in place, locked. */
	if (vm->data_disk == NULL && pause_dir_keep(dir, PAUSE_SCRATCH, vm->files[F_SCRATCH], err) < 0)
		return -1;
	if (vm->files[F_IMAGE] != NULL && pause_dir_keep(dir, PAUSE_IMAGE, vm->files[F_IMAGE], err) < 0)
		return -1;
	if (vm->files[F_IMAGE] == NULL && vm->image != NULL && name_store_image(vm, dir, err) < 0)
		return -1;
	if (vm->console_log != NULL)
		return 0; /* the caller's log stays, and is appended to */
	cleanup_free char *console = malloc(CONSOLE_RING_SIZE + 1);
	if (console == NULL)
		return 0; /* out of memory: the next log lacks the old lines */
	console_text(&vm->console, console, CONSOLE_RING_SIZE);
	return pause_dir_write_text(dir, PAUSE_CONSOLE, console, err);
}

/* Stops the vCPUs and saves everything while QEMU still runs: up to
 * here a failure leaves the VM running. *stopped_at: when the vCPUs
 * stopped (0: they did not). */
static int save(struct sbx_vm *vm, const char *dir, int64_t limit, int64_t *stopped_at, int64_t *migrated_at,
		sbx_error_t *err)
{
	struct qmp *q = monitor(vm, limit, err);
	if (q == NULL)
		return -1;
	if (qmp_call(q, "{\"execute\": \"stop\"}", -1, NULL, 0, limit, err) < 0)
		return -1;
	*stopped_at = sbx_now_ms();
	cleanup_close int fd = pause_dir_new_file(dir, PAUSE_STATE, err);
	if (fd < 0)
		return -1;
	/* A template's clone had x-ignore-shared set for its restore and
	 * keeps it: its RAM is mapped private, not shared, so it is in the
	 * file all the same (vm_wait_loaded sets it again to load it). */
	if (snapshot_migrate(q, fd, limit, err) < 0)
		return -1;
	*migrated_at = sbx_now_ms();
	/* No fsync: the state serves this process only (the VM object and
	 * its channel live in its memory; a host crash loses the VM either
	 * way), and writing 300 MB out before QEMU ends doubled the pause.
	 * sbx_vm_pause_save (vm_save.c) syncs it for a later process. */
	return keep_files(vm, dir, err);
}

/* The pause did not happen: the VM runs on. */
static void undo(struct sbx_vm *vm, const char *dir)
{
	/* No monitor: no command went to QEMU. */
	if (vm->mon != NULL) {
		sbx_error_t err = NULL;
		if (qmp_restart_vcpus(vm->mon, sbx_now_ms() + QMP_RESTART_MS, &err) < 0)
			sbx_warn("vm: a failed pause could not restart the VM: %s", sbx_error_msg(err));
		sbx_error_free(&err);
	}
	chan_release(vm->chan);
	pause_dir_remove(dir);
	set_state(vm, VM_RUNNING);
}

/* Ends QEMU and what lives with it; the VM object stays. */
static void end_qemu(struct sbx_vm *vm)
{
	pthread_mutex_lock(&vm->lock);
	uint64_t delta[2];
	net_link_publish_take(&vm->net, delta);
	vm->publish_kept[0] += delta[0];
	vm->publish_kept[1] += delta[1];
	int64_t active = net_link_activity_ms(&vm->net);
	if (active > vm->net_activity_kept)
		vm->net_activity_kept = active;
	keeper_stop(&vm->keeper);
	vm->keeper.pid = vm->keeper.qemu_pid = -1;
	vm->keeper.lifeline = -1;
	vm->gone_ms = 0;
	net_link_close(&vm->net);
	/* The next helper reports its counts from 0. */
	net_link_init(&vm->net);
	pthread_mutex_unlock(&vm->lock);
	vm_drop_monitor(vm);
	jail_release(vm->jail);
	vm->jail = NULL;
	console_stop(&vm->console);
	console_destroy(&vm->console);
	console_init(&vm->console);
}

int sbx_vm_pause(struct sbx_vm *vm, const char *dir, struct sbx_vm_pause_info *info, int64_t deadline,
		 sbx_error_t *err)
{
	int64_t t0 = sbx_now_ms();
	int64_t limit = deadline >= 0 ? deadline : t0 + PAUSE_LIMIT_MS;
	memset(info, 0, sizeof(*info));
	if (vm->fs.n > 0)
		return sbx_error_set(err, ENOTSUP,
				     "a VM with shared directories cannot be paused: their file servers' state "
				     "cannot be saved with it");
	if (vm->t.ready == 0)
		return sbx_error_set(err, EINVAL, "the VM is not ready yet");
	/* Before the state moves (a paused VM counts as alive): a dead
	 * one has nothing to save. */
	if (vm_pause_running(vm) && !sbx_vm_alive(vm))
		return sbx_error_set(err, EPIPE, "the VM is not running");
	if (move_state(vm, VM_RUNNING, VM_PAUSING, err) < 0)
		return -1;
	if (pause_dir_create(dir, err) < 0) {
		set_state(vm, VM_RUNNING);
		return -1;
	}
	if (chan_hold(vm->chan, limit, err) < 0) {
		pause_dir_remove(dir);
		set_state(vm, VM_RUNNING);
		return sbx_error_prefix(err, "pause");
	}
	int64_t stopped_at = 0, migrated_at = 0;
	if (save(vm, dir, limit, &stopped_at, &migrated_at, err) < 0) {
		undo(vm, dir);
		return sbx_error_prefix(err, "pause");
	}
	char *kept = strdup(dir);
	if (kept == NULL) {
		undo(vm, dir);
		return sbx_error_set(err, ENOMEM, "pause");
	}
	/* From here the VM lives in `dir` only. */
	int64_t saved = sbx_now_ms();
	end_qemu(vm);
	int64_t gone = sbx_now_ms();
	free(vm->pause_dir);
	vm->pause_dir = kept;
	vm->pauses++;
	set_state(vm, VM_PAUSED);
	info->size_bytes = pause_dir_size(dir);
	info->stopped_ms = gone - stopped_at;
	info->duration_ms = sbx_now_ms() - t0;
	sbx_info("vm: paused into %s in %lld ms (vCPUs stopped %lld ms: migrated %lld, files kept %lld, QEMU "
		 "ended %lld; %llu bytes)",
		 dir, (long long)info->duration_ms, (long long)info->stopped_ms, (long long)(migrated_at - stopped_at),
		 (long long)(saved - migrated_at), (long long)(gone - saved), (unsigned long long)info->size_bytes);
	return 0;
}
