/* Each exec runs in a cgroup of its own under the sandbox's ("e<n>" in
 * /sys/fs/cgroup/sandbox): its pids.max bounds what one exec may fork, so a
 * fork bomb left in the background by one exec never takes the processes
 * the next one needs; and cgroup.kill ends everything an exec started when
 * it is killed (a timeout, a stop), background processes that left its
 * process group included.  Cgroups whose processes are all gone are
 * removed as new execs start. */
#ifndef SBX_GUEST_EXEC_CGROUP_H
#define SBX_GUEST_EXEC_CGROUP_H

#include <stdint.h>

#include "common/error.h"

struct exec_cgroup {
	int procs_fd; /* its cgroup.procs, for the child to join; -1 = none */
	char name[24]; /* "e<n>" in the parent; "" = none */
};

/* parent_fd: the sandbox's cgroup directory, or -1 for none (a host test):
 * then *cg is empty and every other call does nothing. */
int exec_cgroup_create(int parent_fd, uint64_t pids_max, struct exec_cgroup *cg, sbx_error_t *err);
/* Kills every process in the exec's cgroup. */
void exec_cgroup_kill(int parent_fd, const struct exec_cgroup *cg);
/* Closes it and removes the cgroup once empty (a busy one goes later). */
void exec_cgroup_release(int parent_fd, struct exec_cgroup *cg);

#endif
