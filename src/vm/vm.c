/* The VM's front (vm.h): start, wait ready, stop, alive.  Its parts
 * share struct sbx_vm through vm_internal.h. */
#include "vm/vm.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/scodes.h"
#include "common/strv.h"
#include "vm/channel.h"
#include "vm/console.h"
#include "vm/disk.h"
#include "vm/keeper.h"
#include "vm/kernel.h"
#include "vm/net_link.h"
#include "vm/oom_log.h"
#include "vm/vm_internal.h"
#include "vm/vm_jail.h"

#define SHUTDOWN_GRACE_MS 3000
#define QEMU_LOG_TAIL 1024

static struct sbx_vm *vm_new(const struct sbx_vm_options *opt, sbx_error_t *err)
{
	struct sbx_vm *vm = vm_alloc(err);
	if (vm == NULL)
		return NULL;
	vm->template_cache_mib = opt->template_cache_mib;
	vm->cpus = opt->cpus ? opt->cpus : 1;
	vm->memory_mib = opt->memory_mib ? opt->memory_mib : 512;
	vm->boot_log = opt->boot_log;
	vm->park = opt->park;
	vm->tcg_cache_mib = opt->tcg_cache_mib ? opt->tcg_cache_mib : SBX_VM_TCG_CACHE_DEFAULT_MIB;
	vm->scratch_bytes = (uint64_t)(opt->scratch_mib ? opt->scratch_mib : SBX_SCRATCH_DEFAULT_MIB) << 20;
	vm->memory_bytes = (uint64_t)vm->memory_mib << 20;
	vm->jail_host = opt->jail;
	vm->nofile = opt->nofile;
	vm->pids_max = opt->guest_pids_max;
	vm->hostname = strdup(opt->hostname != NULL ? opt->hostname : "sandbox");
	vm->env = sbx_strv_dup(opt->env);
	vm->user = strdup(opt->user != NULL ? opt->user : "");
	if (vm_dup_publish(vm, opt->publish_fds, opt->n_publish, err) < 0) {
		vm_free(vm);
		return NULL;
	}
	if (virtiofs_init(&vm->fs, opt->shares, opt->n_shares, err) < 0) {
		vm_free(vm);
		return NULL;
	}
	vm->net_args = opt->net_args != NULL ? sbx_strv_dup(opt->net_args) : NULL;
	vm->warm_up = opt->warm_up != NULL ? sbx_strv_dup(opt->warm_up) : NULL;
	vm->console_log = opt->console_log != NULL ? strdup(opt->console_log) : NULL;
	if (vm->hostname == NULL || vm->env == NULL || vm->user == NULL ||
	    (opt->net_args != NULL && vm->net_args == NULL) || (opt->warm_up != NULL && vm->warm_up == NULL) || (opt->console_log != NULL && vm->console_log == NULL)) {
		vm_free(vm);
		sbx_error_set(err, ENOMEM, "vm");
		return NULL;
	}
	return vm;
}

int vm_decide_accel(const struct sbx_vm_options *opt, enum sbx_accel *accel, uint64_t *jail_mib, sbx_error_t *err)
{
	/* A daemon passes its decision; only a one-shot caller's AUTO probes. */
	if (opt->accel != SBX_ACCEL_AUTO)
		*accel = opt->accel;
	else if (sbx_accel_choose(opt->accel, accel, err) < 0)
		return -1;
	unsigned mib = opt->memory_mib ? opt->memory_mib : 512, cpus = opt->cpus ? opt->cpus : 1;
	unsigned cache = opt->tcg_cache_mib ? opt->tcg_cache_mib : SBX_VM_TCG_CACHE_DEFAULT_MIB;
	*jail_mib = opt->jail_memory_mib ? opt->jail_memory_mib
					 : (uint64_t)mib + SBX_VM_JAIL_QEMU_MIB +
						   (*accel == SBX_ACCEL_TCG ? cache : sbx_kvm_overhead_mib(mib, cpus));
	return 0;
}

/* QEMU, the accelerator, the guest kernel and the boot disk. */
static int find_host_parts(struct sbx_vm *vm, const struct sbx_vm_options *opt, sbx_error_t *err)
{
	if ((vm->qemu = vm_find_qemu(err)) == NULL)
		return -1;
	if (vm_decide_accel(opt, &vm->accel, &vm->jail_memory_mib, err) < 0)
		return -1;
	guest_cpu_choose(vm->accel, opt->nested_virt, opt->smt, vm->cpus, &vm->cpu);
	if ((vm->kernel = sbx_kernel_elf(opt->krunfw_path, err)) == NULL)
		return -1;
	if ((vm->boot = vm_find_boot_disk(opt->boot_disk, err)) == NULL)
		return -1;
	return 0;
}

/* The VM's files and scratch disk, and how it starts (*state_fd >= 0: from
 * a template); what was made is removed again on failure. */
static int make_disks(struct sbx_vm *vm, const struct sbx_vm_options *opt, int *state_fd, sbx_error_t *err)
{
	*state_fd = -1;
	if (opt->data_disk != NULL && vm_open_data_disk(vm, opt->data_disk, err) < 0)
		return -1;
	if (vm_prepare(vm, opt, &vm->image, err) < 0) {
		vm_remove_files(vm);
		return -1;
	}
	if (vm->data_disk != NULL)
		return 0; /* a template's scratch disk cannot stand in for it: cold */
	/* A rootfs directory becomes a private image: nothing to key on.
	 * Shares need guest RAM in a memfd, which templates cannot restore. */
	bool use_snapshot = !opt->cold_boot && vm->files[F_IMAGE] == NULL && vm->fs.n == 0;
	if (vm_choose_start(vm, use_snapshot, state_fd, err) < 0) {
		vm_remove_files(vm);
		return -1;
	}
	return 0;
}

/* A failed start is S300 unless a lower layer named the code. */
static struct sbx_vm *start_failed(sbx_error_t *err)
{
	sbx_error_default_scode(err, SBX_S_VM_BOOT);
	return NULL;
}

struct sbx_vm *sbx_vm_start(const struct sbx_vm_options *opt, sbx_error_t *err)
{
	cleanup_vm struct sbx_vm *vm = vm_new(opt, err);
	if (vm == NULL)
		return start_failed(err);
	if (find_host_parts(vm, opt, err) < 0)
		return start_failed(err);
	vm->t.kernel = sbx_now_ms() - vm->t0;
	cleanup_close int state_fd = -1;
	if (make_disks(vm, opt, &state_fd, err) < 0)
		return start_failed(err);
	vm->t.disks = sbx_now_ms() - vm->t0;
	if (vm_launch(vm, state_fd, err) < 0) {
		sbx_error_default_scode(err, SBX_S_VM_BOOT);
		if (vm->keeper.pid > 0) /* the keeper owns the files: stop removes them */
			sbx_vm_stop(sbx_steal_ptr(vm), 0);
		else
			vm_remove_files(vm);
		return NULL;
	}
	vm->t.qemu = sbx_now_ms() - vm->t0;
	vm->t.restored = vm->restored;
	return sbx_steal_ptr(vm);
}

/* Notes when the VM was first seen dead (vm_check_early_death). */
static bool keeper_gone(struct sbx_vm *vm)
{
	pthread_mutex_lock(&vm->lock);
	bool gone = vm->keeper.pid <= 0 || keeper_exited(&vm->keeper);
	if (gone && vm->gone_ms == 0)
		vm->gone_ms = sbx_now_ms();
	pthread_mutex_unlock(&vm->lock);
	return gone;
}

/* Reads the end of QEMU's own stderr (it explains a failed start). */
static void qemu_log_tail(struct sbx_vm *vm, char *out, size_t cap)
{
	out[0] = '\0';
	if (vm->files[F_QEMU_LOG] == NULL)
		return; /* a cold restart after a failed restore failed early */
	cleanup_close int fd = open(vm->files[F_QEMU_LOG], O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	off_t size = lseek(fd, 0, SEEK_END);
	off_t from = size > (off_t)(cap - 1) ? size - (off_t)(cap - 1) : 0;
	ssize_t n = pread(fd, out, cap - 1, from);
	out[n > 0 ? n : 0] = '\0';
}

/* The first non-empty line of text. */
static void first_line(const char *text, char *out, size_t cap)
{
	while (*text == '\n')
		text++;
	snprintf(out, cap, "%.*s", (int)strcspn(text, "\n"), text);
}

static int boot_failure(struct sbx_vm *vm, sbx_error_t *err)
{
	char tail[CONSOLE_TAIL_BYTES + 1];
	console_tail(&vm->console, tail);
	char qlog[QEMU_LOG_TAIL];
	qemu_log_tail(vm, qlog, sizeof(qlog));
	first_line(qlog, vm->qemu_error, sizeof(vm->qemu_error));
	sbx_error_t e = *err;
	*err = NULL;
	sbx_error_scode(err, SBX_S_VM_BOOT, "VM did not boot: %s%s%s%s%s", sbx_error_msg(e),
			qlog[0] ? "\n--- qemu ---\n" : "", qlog,
			tail[0] ? "\n--- guest console (last lines) ---\n" : "", tail);
	if (e != NULL && *err != NULL)
		(*err)->errnum = e->errnum;
	sbx_error_free(&e);
	return -1;
}


int sbx_vm_wait_ready(struct sbx_vm *vm, int64_t deadline, sbx_error_t *err)
{
	int rc = vm->restored ? vm_restored_ready(vm, deadline, err) : 0;
	/* A copy-on-write template VM ends at its save: the VM starts again
	 * as the template's first clone (at most once more cold). */
	for (int boots = 0; rc == 0 && boots < 3; boots++) {
		if (chan_wait_hello(vm->chan, deadline, err) < 0)
			return boot_failure(vm, err);
		vm->t.hello = sbx_now_ms() - vm->t0;
		int saved = vm->snap_lock >= 0 ? vm_save_template(vm, err) : 0;
		if (saved < 0)
			return boot_failure(vm, err);
		if (saved > 0) {
			rc = vm->restored ? vm_restored_ready(vm, deadline, err) : 0;
			continue;
		}
		if (!vm->park && (vm_send_config(vm, err) < 0 || chan_wait_ready(vm->chan, deadline, err) < 0))
			return boot_failure(vm, err);
		rc = 1;
	}
	if (rc <= 0) {
		if (rc == 0)
			sbx_error_scode(err, SBX_S_VM_BOOT, "the VM did not start from its template");
		return boot_failure(vm, err);
	}
	vm->t.ready = sbx_now_ms() - vm->t0;
	if (vm->park)
		vm_warm_up(vm, deadline);
	sbx_debug("vm: boot phases (ms since start): kernel %lld, disks %lld, qemu %lld, hello %lld, ready %lld%s",
		  (long long)vm->t.kernel, (long long)vm->t.disks, (long long)vm->t.qemu, (long long)vm->t.hello,
		  (long long)vm->t.ready, vm->t.restored ? " (restored from a snapshot)" : "");
	return 0;
}

int sbx_vm_ping(struct sbx_vm *vm, int64_t deadline, sbx_error_t *err)
{
	return chan_ping(vm->chan, deadline, err);
}

static bool helper_gone(struct sbx_vm *vm)
{
	pthread_mutex_lock(&vm->lock);
	bool gone = net_link_exited(&vm->net);
	pthread_mutex_unlock(&vm->lock);
	return gone;
}

bool sbx_vm_alive(struct sbx_vm *vm)
{
	/* No QEMU while paused, and that is no death. */
	int paused = vm_pause_alive(vm);
	if (paused >= 0)
		return paused > 0;
	bool alive = !chan_dead(vm->chan) && !keeper_gone(vm) && !helper_gone(vm);
	pthread_mutex_lock(&vm->lock);
	if (!alive && vm->gone_ms == 0)
		vm->gone_ms = sbx_now_ms();
	pthread_mutex_unlock(&vm->lock);
	return alive;
}

void sbx_vm_death_cause(struct sbx_vm *vm, int64_t wait_ms, char *buf, size_t len)
{
	if (vm_pause_death_cause(vm, buf, len))
		return;
	/* A helper exits when its VM does: give QEMU's exit a moment to show
	 * before blaming the helper. */
	int64_t until = sbx_now_ms() + (helper_gone(vm) && wait_ms > 500 ? 500 : wait_ms);
	while (!keeper_gone(vm) && sbx_now_ms() < until)
		usleep(10000);
	pthread_mutex_lock(&vm->lock);
	bool gone = vm->keeper.pid <= 0 || keeper_exited(&vm->keeper);
	int status = vm->keeper.status;
	pid_t qemu = vm->keeper.qemu_pid;
	bool helper = net_link_exited(&vm->net);
	int helper_status = vm->net.status;
	pthread_mutex_unlock(&vm->lock);
	/* The kernel's clock may lag ours by a little: a second of slack. */
	uint64_t since_us = vm->t0 > 1000 ? (uint64_t)(vm->t0 - 1000) * 1000 : 0;
	if (!gone && helper)
		snprintf(buf, len, "the sandbox's network helper exited (status %d); the sandbox is stopped",
			 helper_status);
	else if (!gone)
		snprintf(buf, len, "the sandbox's VM stopped answering: its control connection was lost");
	else if (status == 128 + SIGKILL && oom_killed(qemu, since_us))
		snprintf(buf, len, "the sandbox's VM was killed by the host's out-of-memory killer");
	else if (status > 128)
		snprintf(buf, len, "the sandbox's VM exited: killed by signal %d (%s)", status - 128,
			 strsignal(status - 128));
	else if (status == 0)
		snprintf(buf, len, "the sandbox's VM exited: its guest powered off");
	else
		snprintf(buf, len, "the sandbox's VM exited: QEMU failed with status %d", status);
}

bool sbx_vm_kvm_refused(struct sbx_vm *vm, int64_t wait_ms, char *cause, size_t len)
{
	if (vm->accel != SBX_ACCEL_KVM || vm->t.hello != 0 || vm->t.ready != 0)
		return false;
	int64_t until = sbx_now_ms() + wait_ms;
	while (!keeper_gone(vm) && sbx_now_ms() < until)
		usleep(10000);
	pthread_mutex_lock(&vm->lock);
	bool failed = vm->keeper.pid > 0 && keeper_exited(&vm->keeper) && vm->keeper.status != 0;
	pthread_mutex_unlock(&vm->lock);
	if (!failed)
		return false;
	/* QEMU's own words, as the failed wait read them (its log goes with it). */
	snprintf(cause, len, "%s", vm->qemu_error[0] != '\0' ? vm->qemu_error : "QEMU exited with a failure");
	return true;
}

int64_t sbx_vm_net_activity_ms(struct sbx_vm *vm)
{
	return vm_pause_net_activity(vm);
}

const struct sbx_vm_timings *sbx_vm_timings(struct sbx_vm *vm)
{
	return &vm->t;
}

int sbx_vm_stop(struct sbx_vm *vm, int64_t deadline)
{
	if (vm == NULL)
		return -1;
	/* Paused: no QEMU, only its state to remove. */
	if (vm_pause_stop(vm)) {
		chan_close(vm->chan);
		vm_free(vm);
		return 0;
	}
	int64_t grace = sbx_now_ms() + SHUTDOWN_GRACE_MS;
	if (deadline >= 0 && deadline < grace)
		grace = deadline;
	/* Dead before we asked: QEMU exited or the guest's connection broke. */
	if (vm->chan != NULL && (chan_dead(vm->chan) || keeper_gone(vm)))
		vm_check_early_death(vm);
	if (vm->chan != NULL && !chan_dead(vm->chan)) {
		sbx_error_t err = NULL;
		if (chan_send_shutdown(vm->chan, &err) < 0 || chan_wait_dead(vm->chan, grace, &err) < 0)
			sbx_debug("vm stop: %s; killing QEMU", sbx_error_msg(err));
		sbx_error_free(&err);
	}
	/* The guest closing its port comes a moment before QEMU exits. */
	while (!keeper_gone(vm) && sbx_now_ms() < grace)
		usleep(5000);
	pthread_mutex_lock(&vm->lock);
	int status = keeper_stop(&vm->keeper);
	pthread_mutex_unlock(&vm->lock);
	console_stop(&vm->console);
	chan_close(vm->chan);
	vm_free(vm);
	return status;
}

void sbx_vm_publish_take(struct sbx_vm *vm, uint64_t delta[2])
{
	pthread_mutex_lock(&vm->lock);
	/* Between two helpers (a pause) there is nothing to take. */
	if (vm->pause_state == VM_RUNNING)
		net_link_publish_take(&vm->net, delta);
	else
		delta[0] = delta[1] = 0;
	/* What the helper before the last pause counted and nobody took. */
	for (int i = 0; i < 2; i++) {
		delta[i] += vm->publish_kept[i];
		vm->publish_kept[i] = 0;
	}
	pthread_mutex_unlock(&vm->lock);
}
