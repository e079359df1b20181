/* A paused VM handed from one process to the next (vm.h sbx_vm_forget,
 * sbx_vm_adopt): the first frees its object and keeps the directory
 * sbx_vm_pause_save (vm_save.c) described; the next reads the
 * description back, checks that this build and host can run it, and
 * makes the object a pause leaves: no QEMU, the control channel held
 * with its streams (channel_adopt.c), for sbx_vm_resume. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/path.h"
#include "common/scodes.h"
#include "proto/proto.h"
#include "vm/pause_desc.h"
#include "vm/pause_dir.h"
#include "vm/qemu_cmdline.h"
#include "vm/vm_internal.h"

void sbx_vm_forget(struct sbx_vm *vm)
{
	if (vm == NULL)
		return;
	pthread_mutex_lock(&vm->lock);
	bool paused = vm->pause_state == VM_PAUSED || vm->pause_state == VM_RESUME_FAILED;
	pthread_mutex_unlock(&vm->lock);
	if (!paused) {
		/* Nothing on disk to keep: a running VM ends with its process. */
		sbx_warn("vm: a %s VM cannot be kept for a later process: stopped", vm_pause_state_name(vm->pause_state));
		sbx_vm_stop(vm, 0);
		return;
	}
	/* No KILL goes anywhere (no QEMU), the signals kept for the resume
	 * are dropped with the streams: the processes run on in the saved
	 * guest, for the adopting process. */
	chan_close(vm->chan);
	vm_free(vm);
}

static void desc_freep(struct pause_desc *d)
{
	pause_desc_free(d);
}

/* The host file still the one the VM ran: same size and mtime. */
static int same_file(const char *what, const struct pause_file *f, sbx_error_t *err)
{
	struct pause_file now = { 0 };
	if (pause_file_stat(f->path, &now, err) < 0)
		return sbx_error_prefix(err, "the paused VM's %s is gone", what);
	free(now.path);
	if (now.size != f->size || now.mtime_ns != f->mtime_ns)
		return sbx_error_set(err, ESTALE, "the paused VM's %s %s changed since the pause", what, f->path);
	return 0;
}

static int present(const char *dir, const char *name, sbx_error_t *err)
{
	cleanup_free char *path = sbx_path_join(dir, name);
	if (path == NULL)
		return sbx_error_set(err, ENOMEM, "pause path");
	if (access(path, R_OK) < 0)
		return sbx_error_errno(err, errno, "the paused VM's %s", name);
	return 0;
}

/* What this build and host need to run the saved VM. */
static int runnable(const char *dir, const struct pause_desc *d, const struct sbx_vm_adopt_options *opt,
		    sbx_error_t *err)
{
	if (d->proto != PROTO_VERSION)
		return sbx_error_set(err, EPROTONOSUPPORT,
				     "the paused VM's guest speaks control protocol %u, this build %u", d->proto,
				     PROTO_VERSION);
	if (same_file("QEMU", &d->qemu, err) < 0 || same_file("kernel", &d->kernel, err) < 0 ||
	    same_file("boot disk", &d->boot, err) < 0)
		return -1;
	if (present(dir, PAUSE_STATE, err) < 0 || present(dir, PAUSE_SCRATCH, err) < 0)
		return -1;
	if (d->cpus > SBX_VM_MAX_CPUS || d->memory_mib < SBX_VM_MIN_MEMORY_MIB ||
	    d->memory_mib > SBX_VM_MAX_MEMORY_MIB || d->tcg_cache_mib < 1 ||
	    d->tcg_cache_mib > SBX_VM_TCG_CACHE_MAX_MIB || strlen(d->snap_key) > SNAPSHOT_KEY_LEN)
		return sbx_error_set(err, EBADMSG, "the paused VM's shape is out of range");
	if (d->accel == SBX_ACCEL_KVM && access("/dev/kvm", R_OK | W_OK) < 0)
		return sbx_error_errno(err, errno, "the paused VM ran under KVM: /dev/kvm");
	/* Without options: a check of the directory alone (sbx_vm_adopt_check). */
	if (opt == NULL)
		return 0;
	size_t n_publish = opt->n_publish;
	if (n_publish != d->n_publish)
		return sbx_error_set(err, EINVAL, "the paused VM had %zu published ports, %zu given", d->n_publish,
				     n_publish);
	return 0;
}

/* The image the VM ran: a private one in the directory; a store's at its
 * path while that is still the file it ran, else its second name in the
 * directory (the store removed or replaced it). */
static char *image_path(const char *dir, struct pause_desc *d, sbx_error_t *err)
{
	if (!d->image_store)
		return present(dir, PAUSE_IMAGE, err) < 0 ? NULL : sbx_path_join(dir, PAUSE_IMAGE);
	if (d->image.path != NULL && same_file("image", &d->image, err) == 0)
		return sbx_steal_ptr(d->image.path);
	if (!d->image_linked) {
		if (*err == NULL)
			sbx_error_set(err, ENOENT, "the paused VM's image is gone");
		return NULL;
	}
	sbx_error_free(err);
	return present(dir, PAUSE_STORE_IMAGE, err) < 0 ? NULL : sbx_path_join(dir, PAUSE_STORE_IMAGE);
}

/* Guest RAM as QEMU had it: a RAM backend object when the saved QEMU had
 * one, so that the state's RAM block and its load (vm_wait_loaded)
 * match.  A template clone's (a private mapping: the state holds every
 * page) becomes anonymous memory: over an empty memfd, each page the load
 * reads to see it is zero would be allocated (a 1 GiB guest that touched
 * 300 MiB held 1 GiB).  A shared one stays a memfd. */
static int ram(struct sbx_vm *vm, const struct pause_desc *d, sbx_error_t *err)
{
	if (!d->ram_backend)
		return 0;
	vm->ram_shared = d->ram_shared;
	vm->ram_anon = !d->ram_shared;
	if (vm->ram_anon)
		return 0;
	if ((vm->ram_fd = memfd_create("sbx-adopted-ram", MFD_CLOEXEC)) < 0)
		return sbx_error_errno(err, errno, "memfd for guest RAM");
	if (ftruncate(vm->ram_fd, (off_t)d->memory_mib << 20) < 0)
		return sbx_error_errno(err, errno, "memfd for guest RAM");
	return 0;
}

/* Takes the description's strings (d is freed after). */
static int build(struct sbx_vm *vm, const char *dir, struct pause_desc *d, sbx_error_t *err)
{
	vm->qemu = sbx_steal_ptr(d->qemu.path);
	vm->kernel = sbx_steal_ptr(d->kernel.path);
	vm->boot = sbx_steal_ptr(d->boot.path);
	if ((vm->image = image_path(dir, d, err)) == NULL)
		return -1;
	vm->accel = (enum sbx_accel)d->accel;
	vm->cpu = (struct guest_cpu){ .nested_virt = d->nested_virt, .threads_per_core = d->threads_per_core };
	vm->cpus = d->cpus;
	vm->memory_mib = d->memory_mib;
	vm->tcg_cache_mib = d->tcg_cache_mib;
	vm->scratch_bytes = d->scratch_bytes;
	vm->memory_bytes = d->memory_bytes;
	vm->jail_memory_mib = d->jail_memory_mib;
	vm->nofile = d->nofile;
	vm->pids_max = d->pids_max;
	vm->boot_log = d->boot_log;
	vm->hostname = sbx_steal_ptr(d->hostname);
	vm->user = sbx_steal_ptr(d->user);
	vm->env = sbx_steal_ptr(d->env);
	vm->net_args = sbx_steal_ptr(d->net_args);
	snprintf(vm->snap_key, sizeof(vm->snap_key), "%s", d->snap_key);
	/* As the in-process pause leaves it: a VM restored from its
	 * template (for sbx_vm_template), past its boot (t.ready: a later
	 * pause asks), its pauses counted (no early death charged to the
	 * template). */
	vm->restored = vm->t.restored = d->template_vm;
	vm->t.loaded = vm->t.ready = 1;
	vm->pauses = d->pauses;
	vm->net_activity_kept = d->net_activity_kept;
	vm->publish_kept[0] = d->publish_kept[0];
	vm->publish_kept[1] = d->publish_kept[1];
	vm->pause_state = VM_PAUSED;
	vm->pause_dir = strdup(dir);
	if (vm->image == NULL || vm->pause_dir == NULL)
		return sbx_error_set(err, ENOMEM, "adopted VM");
	if (virtiofs_init(&vm->fs, NULL, 0, err) < 0 || ram(vm, d, err) < 0)
		return -1;
	vm->chan = chan_adopt(&d->chan, err);
	return vm->chan != NULL ? 0 : -1;
}

static struct sbx_vm *adopt(const char *dir, const struct sbx_vm_adopt_options *opt, sbx_error_t *err)
{
	cleanup_free char *text = pause_dir_read_text(dir, PAUSE_VM, PAUSE_DESC_MAX_BYTES + 1);
	if (text == NULL) {
		sbx_error_set(err, ENOENT, "no description of a paused VM (%s) in %s", PAUSE_VM, dir);
		return NULL;
	}
	__attribute__((cleanup(desc_freep))) struct pause_desc d = { 0 };
	if (pause_desc_parse(text, strlen(text), &d, err) < 0 || runnable(dir, &d, opt, err) < 0)
		return NULL;
	cleanup_vm struct sbx_vm *vm = vm_alloc(err);
	if (vm == NULL)
		return NULL;
	if (opt != NULL) {
		vm->jail_host = opt->jail;
		vm->template_cache_mib = opt->template_cache_mib;
		if (vm_dup_publish(vm, opt->publish_fds, opt->n_publish, err) < 0)
			return NULL;
	}
	if (build(vm, dir, &d, err) < 0)
		return NULL;
	return sbx_steal_ptr(vm);
}

int sbx_vm_adopt_check(const char *dir, sbx_error_t *err)
{
	cleanup_free char *text = pause_dir_read_text(dir, PAUSE_VM, PAUSE_DESC_MAX_BYTES + 1);
	if (text == NULL)
		return sbx_error_set(err, ENOENT, "no description of a paused VM (%s) in %s", PAUSE_VM, dir);
	__attribute__((cleanup(desc_freep))) struct pause_desc d = { 0 };
	if (pause_desc_parse(text, strlen(text), &d, err) < 0 || runnable(dir, &d, NULL, err) < 0)
		return -1;
	cleanup_free char *image = image_path(dir, &d, err);
	return image != NULL ? 0 : -1;
}

struct sbx_vm *sbx_vm_adopt(const char *dir, const struct sbx_vm_adopt_options *opt, sbx_error_t *err)
{
	if (dir == NULL || dir[0] == '\0') {
		sbx_error_set(err, EINVAL, "adopt: no directory");
		return NULL;
	}
	struct sbx_vm *vm = adopt(dir, opt, err);
	if (vm == NULL) {
		/* This build cannot run what the directory holds. */
		sbx_error_default_scode(err, SBX_S_VM_BOOT);
		sbx_error_prefix(err, "adopt of the paused VM in %s", dir);
		return NULL;
	}
	sbx_info("vm: adopted the paused VM in %s", dir);
	return vm;
}
