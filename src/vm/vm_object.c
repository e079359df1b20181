/* The VM object itself (vm_internal.h vm_alloc, vm_free): made empty for
 * a start (vm.c) and for an adoption (vm_adopt.c), freed by a stop and
 * by sbx_vm_forget.  Frees only: what a VM runs is ended before. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/strv.h"
#include "vm/vm_internal.h"
#include "vm/vm_jail.h"

struct sbx_vm *vm_alloc(sbx_error_t *err)
{
	struct sbx_vm *vm = calloc(1, sizeof(*vm));
	if (vm == NULL) {
		sbx_error_set(err, ENOMEM, "vm");
		return NULL;
	}
	pthread_mutex_init(&vm->lock, NULL);
	vm->t0 = sbx_now_ms();
	console_init(&vm->console);
	vm->keeper.pid = -1;
	vm->keeper.lifeline = -1;
	vm->snap_lock = vm->qmp_fd = vm->ram_fd = vm->ctl_next = -1;
	vm->data_lock = -1;
	net_link_init(&vm->net);
	return vm;
}

int vm_dup_publish(struct sbx_vm *vm, const int *fds, size_t n, sbx_error_t *err)
{
	/* More than the helper takes were never forwarded: not kept. */
	for (; vm->n_publish < n && vm->n_publish < NET_MAX_PUBLISH; vm->n_publish++) {
		if ((vm->publish[vm->n_publish] = fcntl(fds[vm->n_publish], F_DUPFD_CLOEXEC, 3)) < 0)
			return sbx_error_errno(err, errno, "published port");
	}
	return 0;
}

void vm_free(struct sbx_vm *vm)
{
	vm_drop_monitor(vm);
	if (vm->ctl_next >= 0)
		close(vm->ctl_next);
	free(vm->pause_dir);
	for (size_t i = 0; i < vm->n_retired; i++)
		free(vm->retired[i]);
	free(vm->retired);
	jail_release(vm->jail);
	vm_free_files(vm);
	vm_drop_snapshot_fds(vm);
	if (vm->ram_fd >= 0)
		close(vm->ram_fd);
	free(vm->snap_text);
	free(vm->log_lead);
	free(vm->qemu);
	free(vm->kernel);
	free(vm->boot);
	free(vm->image);
	free(vm->data_disk);
	free(vm->console_log);
	virtiofs_free(&vm->fs);
	if (vm->data_lock >= 0)
		close(vm->data_lock);
	free(vm->hostname);
	sbx_strv_free(vm->env);
	sbx_strv_free(vm->net_args);
	sbx_strv_free(vm->warm_up);
	net_link_close(&vm->net);
	for (size_t i = 0; i < vm->n_publish; i++)
		close(vm->publish[i]);
	free(vm->user);
	console_destroy(&vm->console);
	pthread_mutex_destroy(&vm->lock);
	free(vm);
}

void vm_freep(struct sbx_vm **vm)
{
	if (*vm != NULL)
		vm_free(*vm);
}
