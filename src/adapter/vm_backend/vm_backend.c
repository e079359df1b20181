/* The VM backend's ops table (backend.h) and its small ops; boot, exec and
 * a sandbox's VM have files of their own (vm_backend_boot.c,
 * vm_backend_exec.c, vm_backend_vm.c). */
#include <errno.h>
#include <stdlib.h>

#include "adapter/fs/fs_errors.h"
#include "adapter/vm_backend/vm_backend_internal.h"
#include "common/clock.h"
#include "common/scodes.h"
#include "vm/net_link.h"
#include "vm/template_memfd.h"

#define WRITE_FILE_MS 60000 /* one file of run */

void *vm_backend_new(const struct sbx_config *cfg, struct sbx_jail_host *jail, sbx_error_t *err)
{
	struct backend *b = calloc(1, sizeof(*b));
	if (b == NULL) {
		sbx_jail_host_free(jail);
		return sbx_error_errno(err, ENOMEM, "backend"), NULL;
	}
	b->cfg = cfg;
	b->jail = jail;
	pthread_mutex_init(&b->images.lock, NULL);
	atomic_init(&b->kvm, 0);
	return b;
}

void vm_backend_free(void *ctx)
{
	struct backend *b = ctx;
	if (b != NULL) {
		warm_pool_stop(b->pool);
		standby_stop(b->standby);
		sbx_jail_host_free(b->jail);
		pthread_mutex_destroy(&b->images.lock);
		free(b->images.root);
		json_decref(b->images.names);
	}
	free(b);
}

void vm_backend_collect_metrics(void *ctx)
{
	struct backend *b = ctx;
	warm_pool_collect_metrics(b->pool);
	standby_collect_metrics(b->standby);
	/* every networked VM's helper: sandboxes' and workers' */
	net_link_report_collect();
}

static bool alive(void *vm)
{
	return sbx_vm_alive(((struct sandbox_vm *)vm)->vm);
}

static int write_file(void *vm, const char *path, uint32_t mode, bool parents, const void *data, size_t len,
		      sbx_error_t *err)
{
	struct sandbox_vm *s = vm;
	if (sbx_vm_write_file(s->vm, path, mode, parents, data, len, sbx_now_ms() + WRITE_FILE_MS, err) == 0)
		return 0;
	if (!sbx_vm_alive(s->vm)) {
		vm_backend_blame_death(s, err);
		return -1;
	}
	/* The guest's errno gets its S-code as fs::write's would. */
	fs_error_classify(err, PROTO_FS_WRITE);
	return -1;
}

static const char *boot_mode(void *vm)
{
	return ((struct sandbox_vm *)vm)->boot_mode;
}

static int64_t net_activity_ms(void *vm)
{
	return sbx_vm_net_activity_ms(((struct sandbox_vm *)vm)->vm);
}

static void publish_take(void *vm, uint64_t delta[2])
{
	sbx_vm_publish_take(((struct sandbox_vm *)vm)->vm, delta);
}

static void facts(void *vm, struct sbx_vm_facts *f)
{
	struct sbx_vm *v = ((struct sandbox_vm *)vm)->vm;
	f->pid = sbx_vm_pid(v);
	f->console_log = sbx_vm_console_log(v);
	f->boot = ((struct sandbox_vm *)vm)->boot_line;
}

static uint64_t templates_mib(void *ctx)
{
	return (template_memfd_usage() + (1u << 20) - 1) >> 20;
}

const struct sbx_backend_ops vm_backend_ops = {
	.boot = vm_backend_boot,
	.exec = vm_backend_exec,
	.write_file = write_file,
	.stop = vm_backend_stop,
	.alive = alive,
	.net_activity_ms = net_activity_ms,
	.publish_take = publish_take,
	.templates_mib = templates_mib,
	.boot_mode = boot_mode,
	.facts = facts,
	.capacity = vm_backend_capacity,
	.pause = vm_backend_pause,
	.resume = vm_backend_resume,
	.abort_paused = vm_backend_abort_paused,
	.pause_keep = vm_backend_pause_keep,
	.forget = vm_backend_forget,
	.adopt = vm_backend_adopt,
	.adopted_proc = vm_backend_adopted_proc,
	.discard_paused = vm_backend_discard_paused,
	.branch_paused = vm_backend_branch_paused,
	.check_paused = vm_backend_check_paused,
	.proc_start = vm_backend_proc_start,
	.proc_read = vm_backend_proc_read,
	.proc_write = vm_backend_proc_write,
	.proc_close_stdin = vm_backend_proc_close_stdin,
	.proc_signal = vm_backend_proc_signal,
	.proc_wait = vm_backend_proc_wait,
	.proc_resize = vm_backend_proc_resize,
	.proc_free = vm_backend_proc_free,
};
