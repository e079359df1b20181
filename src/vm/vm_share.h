/* What a VM shares of the host: its own header, below both the VM (vm.h)
 * and the virtio-fs devices that serve it (virtiofs.h). */
#ifndef SBX_VM_VM_SHARE_H
#define SBX_VM_VM_SHARE_H

#include <stdbool.h>

/* A host directory shared into the guest with virtio-fs. */
struct sbx_vm_share {
	const char *host_dir;   /* absolute host directory */
	const char *guest_path; /* absolute mount point in the guest (created if missing) */
	bool read_only;         /* enforced on the host side too */
	int host_fd;            /* -1: host_dir is opened at the start.  Else the
				   directory the caller checked (O_PATH; dup'ed):
				   what is shared, whatever host_dir is by then */
};

#endif
