/* Resuming a paused VM (vm.h sbx_vm_resume): a new VM directory with the
 * kept files linked back, a new QEMU (with its jail, network helper and
 * console, as vm_launch starts any) loading the paused state, the
 * control channel moved onto its socket, and RESUMED (proto.h) sent
 * before the frames held over the pause: the guest's clock lags by the
 * pause and its CRNG state sat on the host's disk. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/path.h"
#include "common/scodes.h"
#include "vm/console_ring.h"
#include "vm/pause_dir.h"
#include "vm/vm_internal.h"

#define RESUME_LIMIT_MS 120000
#define RESUMED_ENTROPY 64

/* The next VM directory with the paused VM's files in it. */
static int restore_files(struct sbx_vm *vm, const char *dir, sbx_error_t *err)
{
	/* The old console log's path may be held by a caller: it stays
	 * allocated (its file went with the old VM directory). */
	if (vm->files[F_CONSOLE] != NULL) {
		char **r = realloc(vm->retired, (vm->n_retired + 1) * sizeof(*r));
		if (r == NULL)
			return sbx_error_errno(err, ENOMEM, "vm paths");
		vm->retired = r;
		vm->retired[vm->n_retired++] = vm->files[F_CONSOLE];
		vm->files[F_CONSOLE] = NULL;
	}
	/* An adopted VM whose store image went runs a second name of it in
	 * its own directory, linked from the pause directory's (which goes
	 * after the resume): the adoption's, or the one a later pause made
	 * (vm_pause.c) while the old link was still there; it went with the
	 * old VM directory. */
	cleanup_free char *store = sbx_path_join(dir, PAUSE_STORE_IMAGE);
	if (store == NULL)
		return sbx_error_errno(err, ENOMEM, "vm paths");
	bool second_name = vm->files[F_STORE_IMAGE] != NULL || strcmp(vm->image, store) == 0;
	vm_free_files(vm);
	if (vm_make_files(vm, err) < 0)
		return -1;
	if (vm->data_disk == NULL && pause_dir_restore(dir, PAUSE_SCRATCH, vm->files[F_SCRATCH], err) < 0)
		return -1;
	cleanup_free char *image = sbx_path_join(dir, PAUSE_IMAGE);
	if (image == NULL)
		return sbx_error_errno(err, ENOMEM, "vm paths");
	if (access(image, F_OK) == 0) {
		/* A private image built from a rootfs directory. */
		char *copy = NULL;
		if ((vm->files[F_IMAGE] = sbx_path_join(vm->dir, PAUSE_IMAGE)) == NULL ||
		    (copy = strdup(vm->files[F_IMAGE])) == NULL)
			return sbx_error_errno(err, ENOMEM, "vm paths");
		free(vm->image);
		vm->image = copy;
		if (pause_dir_restore(dir, PAUSE_IMAGE, vm->files[F_IMAGE], err) < 0)
			return -1;
	}
	if (second_name) {
		/* Among the VM's files: its keeper removes the link, else the
		 * directory could not go either. */
		cleanup_free char *copy = NULL;
		if ((vm->files[F_STORE_IMAGE] = sbx_path_join(vm->dir, PAUSE_STORE_IMAGE)) == NULL ||
		    (copy = strdup(vm->files[F_STORE_IMAGE])) == NULL)
			return sbx_error_errno(err, ENOMEM, "vm paths");
		if (pause_dir_restore(dir, PAUSE_STORE_IMAGE, vm->files[F_STORE_IMAGE], err) < 0)
			return -1;
		free(vm->image);
		vm->image = sbx_steal_ptr(copy);
	}
	/* The VM's own log starts again with what it held; a caller's log
	 * is appended to and holds it already. */
	if (vm->console_log == NULL) {
		free(vm->log_lead);
		vm->log_lead = pause_dir_read_text(dir, PAUSE_CONSOLE, CONSOLE_RING_SIZE);
	}
	return 0;
}

/* The guest's clock and fresh entropy. */
static int resumed_msg(struct proto_msg *m, uint8_t *entropy, sbx_error_t *err)
{
	struct timespec now;
	if (clock_gettime(CLOCK_REALTIME, &now) < 0)
		return sbx_error_errno(err, errno, "clock");
	for (size_t got = 0; got < RESUMED_ENTROPY;) {
		ssize_t n = getrandom(entropy + got, RESUMED_ENTROPY - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sbx_error_errno(err, errno, "getrandom");
		got += (size_t)n;
	}
	*m = (struct proto_msg){ .stream = 0, .type = PROTO_RESUMED };
	m->u.resumed = (struct proto_resumed){
		.realtime_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec,
		.entropy = entropy, .entropy_len = RESUMED_ENTROPY,
	};
	return 0;
}

static int start(struct sbx_vm *vm, int64_t limit, sbx_error_t *err)
{
	int64_t t0 = sbx_now_ms();
	const char *dir = vm->pause_dir;
	if (restore_files(vm, dir, err) < 0) {
		/* Nothing owns the new directory yet. */
		vm_remove_files(vm);
		return -1;
	}
	cleanup_close int state = pause_dir_open(dir, PAUSE_STATE, err);
	if (state < 0) {
		vm_remove_files(vm);
		return -1;
	}
	if (vm_launch(vm, state, err) < 0) {
		if (vm->keeper.pid <= 0)
			vm_remove_files(vm);
		return -1;
	}
	int64_t launched = sbx_now_ms();
	if (vm_wait_loaded(vm, limit, err) < 0)
		return -1;
	sbx_debug("vm: resume: QEMU launched in %lld ms, state loaded and running %lld ms later",
		  (long long)(launched - t0), (long long)(sbx_now_ms() - launched));
	uint8_t entropy[RESUMED_ENTROPY];
	struct proto_msg m;
	if (resumed_msg(&m, entropy, err) < 0)
		return -1;
	int rc = chan_resume(vm->chan, sbx_steal_fd(vm->ctl_next), &m, limit, err);
	explicit_bzero(entropy, sizeof(entropy));
	return rc;
}

/* A resume that failed: whatever it started goes; the VM is dead, its
 * pause directory kept for sbx_vm_stop. */
static void failed(struct sbx_vm *vm, sbx_error_t *err)
{
	pthread_mutex_lock(&vm->lock);
	if (vm->keeper.pid > 0)
		keeper_stop(&vm->keeper); /* the keeper removes the new VM directory */
	vm->keeper.pid = vm->keeper.qemu_pid = -1;
	vm->keeper.lifeline = -1;
	net_link_close(&vm->net);
	net_link_init(&vm->net);
	snprintf(vm->pause_error, sizeof(vm->pause_error), "%s", sbx_error_msg(*err));
	pthread_mutex_unlock(&vm->lock);
	vm_drop_monitor(vm);
	if (vm->ctl_next >= 0)
		close(vm->ctl_next);
	vm->ctl_next = -1;
	jail_release(vm->jail);
	vm->jail = NULL;
	console_stop(&vm->console);
	chan_abort_hold(vm->chan, "the VM did not resume");
	pthread_mutex_lock(&vm->lock);
	vm->pause_state = VM_RESUME_FAILED;
	pthread_mutex_unlock(&vm->lock);
}

int sbx_vm_resume(struct sbx_vm *vm, int64_t deadline, sbx_error_t *err)
{
	int64_t t0 = sbx_now_ms();
	int64_t limit = deadline >= 0 ? deadline : t0 + RESUME_LIMIT_MS;
	pthread_mutex_lock(&vm->lock);
	enum vm_pause_state s = vm->pause_state;
	if (s == VM_PAUSED)
		vm->pause_state = VM_RESUMING;
	pthread_mutex_unlock(&vm->lock);
	if (s != VM_PAUSED)
		return sbx_error_set(err, s == VM_RESUME_FAILED ? EPIPE : EINVAL,
				     s == VM_RESUMING ? "the VM is already being resumed" : "the VM is not paused");
	/* An adopted VM's processes nobody took: killed after RESUMED. */
	chan_release_adopted(vm->chan);
	if (start(vm, limit, err) < 0) {
		failed(vm, err);
		sbx_error_default_scode(err, SBX_S_VM_BOOT);
		return sbx_error_prefix(err, "resume");
	}
	pause_dir_remove(vm->pause_dir);
	free(vm->pause_dir);
	vm->pause_dir = NULL;
	pthread_mutex_lock(&vm->lock);
	vm->gone_ms = 0;
	vm->pause_state = VM_RUNNING;
	pthread_mutex_unlock(&vm->lock);
	sbx_info("vm: resumed in %lld ms", (long long)(sbx_now_ms() - t0));
	return 0;
}
