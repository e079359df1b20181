/* Launches QEMU for a VM under its keeper (vm_internal.h vm_launch): the
 * jail, the network helper, the console, the control and monitor
 * sockets, and QEMU's command line.  Below the front (vm.c) and the
 * template file (vm_template.c), which both launch through it. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "vm/channel.h"
#include "vm/console.h"
#include "vm/disk.h"
#include "vm/keeper.h"
#include "vm/net_link.h"
#include "vm/qemu_cmdline.h"
#include "vm/tsc.h"
#include "vm/vm_internal.h"
#include "vm/vm_jail.h"

static int vm_socketpair(int pair[2], sbx_error_t *err)
{
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
		return sbx_error_errno(err, errno, "socketpair");
	return 0;
}

/* Whether QEMU writes the overlay upper disk with O_DIRECT; said once per
 * process when the file system refuses it. */
static bool upper_direct(const struct sbx_vm *vm)
{
	static atomic_bool warned;
	if (disk_direct_io(vm_upper_disk(vm)))
		return true;
	if (!atomic_exchange(&warned, true))
		sbx_warn("vm: %s refuses O_DIRECT: guests' disk writes go through the host's page cache, "
			 "charged to their VM's memory limit", vm_upper_disk(vm));
	return false;
}

/* Our ends of the pairs stay; QEMU's ends are closed at return, once the
 * keeper holds its own copies. */
int vm_launch(struct sbx_vm *vm, int state_fd, sbx_error_t *err)
{
	if (sbx_jail_host_active(vm->jail_host)) {
		struct vm_jail_args ja = {
			.dir = vm->dir, .qemu = vm->qemu, .kernel = vm->kernel, .boot = vm->boot, .image = vm->image,
			.scratch = vm_upper_disk(vm), .cpus = vm->cpus, .memory_limit_mib = vm->jail_memory_mib,
			.guest_mib = vm->memory_mib, .kvm = vm->accel == SBX_ACCEL_KVM,
			.saves_template = vm->snap_lock >= 0 && vm->ram_fd < 0, .scratch_bytes = vm->scratch_bytes,
			.ram_fd = vm->ram_fd >= 0,
		};
		ja.ram_memfd = vm->fs.n > 0;
		ja.ram_cow = vm->ram_fd >= 0 && !vm->ram_shared;
		if (ja.ram_cow) {
			struct stat st;
			if (fstat(vm->ram_fd, &st) < 0)
				return sbx_error_errno(err, errno, "template memory");
			ja.ram_held_bytes = (uint64_t)st.st_blocks * 512;
		}
		if ((vm->jail = vm_jail_prepare(vm->jail_host, &ja, err)) == NULL)
			return -1;
	}
	cleanup_fd_pair int con[2] = { -1, -1 };
	cleanup_fd_pair int ctl[2] = { -1, -1 };
	cleanup_fd_pair int qmp[2] = { -1, -1 };
	if (vm_socketpair(con, err) < 0)
		return -1;
	if (vm_socketpair(ctl, err) < 0)
		return -1;
	/* The monitor: a snapshot's save or restore and any later pause.
	 * A VM with shares cannot be paused (nor snapshotted) and has
	 * descriptors enough to pass. */
	if (vm->fs.n == 0 && vm_socketpair(qmp, err) < 0)
		return -1;
	int fds[KEEPER_MAX_FDS] = { con[1], ctl[1] };
	int nfds = 2, qmp_at = 0, state_at = 0, net_at = 0, ram_at = 0;
	if (vm->net_args != NULL) {
		if (net_link_open(&vm->net, err) < 0) {
			net_link_close(&vm->net);
			return -1;
		}
		net_at = KEEPER_QEMU_FD_BASE + nfds;
		fds[nfds++] = vm->net.qemu_fd;
	}
	struct qemu_share qs[SBX_VM_MAX_SHARES];
	struct keeper_side sides[SBX_VM_MAX_SHARES];
	if (virtiofs_open(&vm->fs, vm->dir, err) < 0 ||
	    virtiofs_jail(&vm->fs, vm->jail_host, vm->dir, vm->cpus, err) < 0) {
		net_link_close(&vm->net);
		return -1;
	}
	virtiofs_plan(&vm->fs, fds, &nfds, qs, sides);
	if (qmp[1] >= 0) {
		qmp_at = KEEPER_QEMU_FD_BASE + nfds;
		fds[nfds++] = qmp[1];
	}
	if (state_fd >= 0) {
		state_at = KEEPER_QEMU_FD_BASE + nfds;
		fds[nfds++] = state_fd;
	}
	if (vm->ram_fd >= 0) {
		ram_at = KEEPER_QEMU_FD_BASE + nfds;
		fds[nfds++] = vm->ram_fd;
	}
	vm->incoming_at = state_at;
	struct qemu_config qc = {
		.qemu = vm->qemu, .kernel = vm->kernel, .boot_disk = vm->boot, .image = vm->image,
		.scratch = vm_upper_disk(vm), .scratch_direct = upper_direct(vm), .cpus = vm->cpus,
		.memory_mib = vm->memory_mib, .accel = vm->accel, .nested_virt = vm->cpu.nested_virt,
		.threads_per_core = vm->cpu.threads_per_core,
		.console_fd = KEEPER_QEMU_FD_BASE, .control_fd = KEEPER_QEMU_FD_BASE + 1,
		.qmp_fd = qmp_at, .incoming_fd = state_at, .net_fd = net_at,
		.ram_fd = ram_at, .ram_shared = vm->ram_shared, .ram_anon = vm->ram_anon,
		.incoming_defer = state_at > 0 && (ram_at > 0 || vm->ram_anon),
		.tsc_khz = vm->accel == SBX_ACCEL_TCG ? sbx_host_tsc_khz() : 0, .boot_log = vm->boot_log,
		.tcg_cache_mib = vm->tcg_cache_mib, .shares = qs, .n_shares = vm->fs.n,
	};
	cleanup_strv char **argv = qemu_cmdline(&qc, err);
	if (argv == NULL)
		return -1;
	_Static_assert(VM_N_FILES <= KEEPER_MAX_FILES, "the keeper removes every file of the VM's");
	const char *files[VM_N_FILES];
	int nfiles = 0;
	for (size_t i = 0; i < VM_N_FILES; i++) {
		if (vm->files[i] != NULL)
			files[nfiles++] = vm->files[i];
	}
	struct keeper_spec spec = { .argv = argv, .fds = fds, .nfds = nfds, .log = vm->files[F_QEMU_LOG],
				    .files = files, .nfiles = nfiles, .dir = vm->dir, .jail = vm->jail,
				    .sides = sides, .nsides = (int)vm->fs.n };
	int started = keeper_start(&vm->keeper, &spec, err);
	virtiofs_close_fds(&vm->fs);
	if (started < 0) {
		net_link_close(&vm->net);
		return -1;
	}
	if (vm->net_args != NULL && net_link_spawn(&vm->net, vm->net_args, vm->publish, vm->n_publish, vm->keeper.pid, vm->jail_host, vm->dir, err) < 0) {
		net_link_close(&vm->net);
		return -1;
	}
	vm->qmp_fd = sbx_steal_fd(qmp[0]);
	/* From here the keeper owns the files; failures go through stop. */
	sbx_error_t cerr = NULL;
	if (vm->boot_log)
		console_echo(&vm->console, STDERR_FILENO, vm->t0);
	if (vm->log_lead != NULL)
		console_lead(&vm->console, vm->log_lead);
	const char *log = vm->console_log != NULL ? vm->console_log : vm->files[F_CONSOLE];
	if (console_start(&vm->console, sbx_steal_fd(con[0]), log, vm->console_log != NULL, &cerr) < 0) {
		/* Not fatal: the VM runs without a console log. */
		sbx_warn("vm: %s", sbx_error_msg(cerr));
		sbx_error_free(&cerr);
	}
	/* A resume keeps its channel (vm_resume.c): the reader moves onto
	 * the new socket. */
	if (vm->chan != NULL) {
		vm->ctl_next = sbx_steal_fd(ctl[0]);
		return 0;
	}
	vm->chan = chan_open(sbx_steal_fd(ctl[0]), err);
	return vm->chan != NULL ? 0 : -1;
}
