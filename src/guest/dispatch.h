/* The guest's protocol server: everything after READY.  Serves any
 * connected fd (the virtio port in the VM, a socketpair in unit tests) with
 * one single-threaded epoll loop: processes with their pipes or terminals,
 * credit-based flow control, SIGCHLD through a signalfd, a bounded output
 * queue. */
#ifndef SBX_GUEST_DISPATCH_H
#define SBX_GUEST_DISPATCH_H

#include <stdint.h>

#include "common/error.h"
#include "guest/user_resolve.h"

#define DISPATCH_MAX_PROCS 256 /* SPAWN and SPAWN_PTY together */
#define DISPATCH_MAX_FS_WRITES 64
#define DISPATCH_MAX_FS_OPS 64 /* fs requests served by children at once */
/* After the main process exits, how long its pipes may stay quiet before
 * EXIT is sent anyway (a background grandchild may hold them open). */
#define DISPATCH_DRAIN_MS 200

struct dispatch_config {
	char **boot_env;     /* environment under every process's own; may be NULL */
	int cgroup_dir_fd;   /* the sandbox's cgroup: each exec gets a cgroup
				in it (guest/exec_cgroup.h); -1 = none */
	uint64_t exec_pids_max; /* pids.max of each exec's cgroup, 0 = none */
	const struct guest_user *user; /* every process drops to it; NULL = run as ourselves */
};

/* Serves until SHUTDOWN (returns 0), the peer closing the connection
 * (returns 1), or a framing or I/O error (returns -1 with *err).  In every
 * case all process groups it started are sent SIGKILL before it returns;
 * blocks SIGCHLD and ignores SIGPIPE for the calling process. */
int dispatch_serve(int fd, const struct dispatch_config *cfg, sbx_error_t *err);

#endif
