/* A paused VM made resumable by a later process (vm.h
 * sbx_vm_pause_save): its description (pause_desc.h) written into the
 * pause directory as PAUSE_VM, whole or not at all, after the state it
 * names is on disk; the store image it ran linked in.  sbx_vm_adopt
 * (vm_adopt.c) reads it back. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/path.h"
#include "common/strv.h"
#include "proto/proto.h"
#include "vm/pause_desc.h"
#include "vm/pause_dir.h"
#include "vm/vm_internal.h"

static void desc_freep(struct pause_desc *d)
{
	pause_desc_free(d);
}

/* The VM's host files, shape and identity (not its channel). */
static int describe(struct sbx_vm *vm, struct pause_desc *d, sbx_error_t *err)
{
	d->format = PAUSE_DESC_FORMAT;
	d->proto = PROTO_VERSION;
	if (pause_file_stat(vm->qemu, &d->qemu, err) < 0 || pause_file_stat(vm->kernel, &d->kernel, err) < 0 ||
	    pause_file_stat(vm->boot, &d->boot, err) < 0)
		return -1;
	*d = (struct pause_desc){
		.format = d->format, .proto = d->proto, .qemu = d->qemu, .kernel = d->kernel, .boot = d->boot,
		.accel = vm->accel, .nested_virt = vm->cpu.nested_virt, .threads_per_core = vm->cpu.threads_per_core,
		.cpus = vm->cpus, .memory_mib = vm->memory_mib, .tcg_cache_mib = vm->tcg_cache_mib,
		.scratch_bytes = vm->scratch_bytes, .memory_bytes = vm->memory_bytes,
		.jail_memory_mib = vm->jail_memory_mib, .nofile = vm->nofile, .pids_max = vm->pids_max,
		.boot_log = vm->boot_log, .n_publish = vm->n_publish, .ram_backend = vm->ram_fd >= 0 || vm->ram_anon,
		.ram_shared = vm->ram_shared, .template_vm = sbx_vm_template(vm) != NULL, .pauses = vm->pauses,
	};
	pthread_mutex_lock(&vm->lock);
	d->net_activity_kept = vm->net_activity_kept;
	d->publish_kept[0] = vm->publish_kept[0];
	d->publish_kept[1] = vm->publish_kept[1];
	pthread_mutex_unlock(&vm->lock);
	d->hostname = strdup(vm->hostname);
	d->user = strdup(vm->user);
	d->snap_key = strdup(vm->snap_key);
	d->env = sbx_strv_dup(vm->env);
	d->net_args = vm->net_args != NULL ? sbx_strv_dup(vm->net_args) : NULL;
	if (d->hostname == NULL || d->user == NULL || d->snap_key == NULL || d->env == NULL ||
	    (vm->net_args != NULL && d->net_args == NULL))
		return sbx_error_set(err, ENOMEM, "pause description");
	return 0;
}

/* The image the VM ran: a private one is in the directory (the pause
 * kept it, PAUSE_IMAGE); a store's is named by its path (its size and
 * mtime checked at the adoption) and, on the same file system, by a
 * second name (PAUSE_STORE_IMAGE, the pause's) that outlives a removal
 * from the store. */
static int keep_image(struct sbx_vm *vm, const char *dir, struct pause_desc *d, sbx_error_t *err)
{
	d->image_store = vm->files[F_IMAGE] == NULL;
	cleanup_free char *kept = sbx_path_join(dir, d->image_store ? PAUSE_STORE_IMAGE : PAUSE_IMAGE);
	if (kept == NULL)
		return sbx_error_set(err, ENOMEM, "pause path");
	d->image_linked = access(kept, F_OK) == 0;
	if (!d->image_store)
		return d->image_linked ? 0 : sbx_error_set(err, ENOENT, "the paused VM's image is not in %s", dir);
	/* An adopted VM whose store image was gone runs the second name of
	 * its last pause: no store path left to record. */
	if (pause_file_stat(vm->image, &d->image, err) == 0)
		return 0;
	sbx_error_free(err);
	return d->image_linked ? 0 : sbx_error_set(err, ENOENT, "the paused VM's image %s is gone", vm->image);
}

/* What the description names is on disk before the description is. */
static int sync_file(const char *dir, const char *name, sbx_error_t *err)
{
	cleanup_close int fd = pause_dir_open(dir, name, err);
	if (fd < 0)
		return -1;
	if (fsync(fd) < 0)
		return sbx_error_errno(err, errno, "fsync %s", name);
	return 0;
}

static int write_all(int fd, const char *text, size_t len, sbx_error_t *err)
{
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, text + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return sbx_error_errno(err, n < 0 ? errno : EIO, "write %s", PAUSE_VM_TMP);
		off += (size_t)n;
	}
	return 0;
}

/* Written under a temporary name, synced, renamed: a crash leaves the
 * old description or none, never half of one. */
static int write_desc(const char *dir, const struct pause_desc *d, sbx_error_t *err)
{
	cleanup_free char *text = pause_desc_format(d, err);
	cleanup_free char *tmp = sbx_path_join(dir, PAUSE_VM_TMP);
	cleanup_free char *path = sbx_path_join(dir, PAUSE_VM);
	if (text == NULL)
		return -1;
	if (tmp == NULL || path == NULL)
		return sbx_error_set(err, ENOMEM, "pause path");
	if (unlink(tmp) < 0 && errno != ENOENT)
		return sbx_error_errno(err, errno, "remove %s", tmp);
	cleanup_close int fd = pause_dir_new_file(dir, PAUSE_VM_TMP, err);
	if (fd < 0)
		return -1;
	if (write_all(fd, text, strlen(text), err) < 0)
		return -1;
	if (fsync(fd) < 0)
		return sbx_error_errno(err, errno, "fsync %s", tmp);
	if (rename(tmp, path) < 0)
		return sbx_error_errno(err, errno, "rename %s", tmp);
	cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd) < 0)
		return sbx_error_errno(err, errno, "fsync %s", dir);
	return 0;
}

static int save(struct sbx_vm *vm, const char *dir, bool sync, int64_t deadline, sbx_error_t *err)
{
	__attribute__((cleanup(desc_freep))) struct pause_desc d = { 0 };
	if (describe(vm, &d, err) < 0)
		return -1;
	if (chan_save(vm->chan, deadline, &d.chan, err) < 0)
		return -1;
	if (keep_image(vm, dir, &d, err) < 0)
		return -1;
	/* The pause wrote the state for its own process only, unsynced.
	 * Without `sync` the caller syncs what it keeps (a snapshot's
	 * capture: its own branch, after the VM runs again). */
	if (sync && (sync_file(dir, PAUSE_STATE, err) < 0 || sync_file(dir, PAUSE_SCRATCH, err) < 0))
		return -1;
	if (sync && d.image_linked && !d.image_store && sync_file(dir, PAUSE_IMAGE, err) < 0)
		return -1;
	return write_desc(dir, &d, err);
}

int sbx_vm_pause_save(struct sbx_vm *vm, bool sync, int64_t deadline, sbx_error_t *err)
{
	pthread_mutex_lock(&vm->lock);
	enum vm_pause_state s = vm->pause_state;
	pthread_mutex_unlock(&vm->lock);
	if (s != VM_PAUSED || vm->pause_dir == NULL)
		return sbx_error_set(err, EINVAL, "save of a paused VM: the VM is %s", vm_pause_state_name(s));
	/* What a sandbox never has, and a later process could not take over. */
	if (vm->data_disk != NULL || vm->fs.n > 0 || vm->console_log != NULL)
		return sbx_error_set(err, ENOTSUP,
				     "save of a paused VM: a data disk, shared directories or a console log of "
				     "the caller's cannot be handed to another process");
	if (save(vm, vm->pause_dir, sync, deadline, err) < 0)
		return sbx_error_prefix(err, "save of a paused VM");
	sbx_info("vm: paused VM saved for a later process in %s", vm->pause_dir);
	return 0;
}
