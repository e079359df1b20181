/* WARM_UP (proto.h), before CONFIG: PID 1 runs `true` once through its own
 * process server (guest/dispatch.h), served to itself over a socketpair by
 * a child, as the host's first exec will run: the user lookup, the exec's
 * cgroup, fork and exec, the pipes, the reaping.  Under TCG a restored VM
 * starts with no translated code; a parked VM of a warm pool that did this
 * answers its CONFIG and first exec with those paths translated.
 * Nothing of it stays: the child and everything it started are gone and
 * reaped, the exec's cgroup removed, nothing written but what the kernel
 * counts; the sandbox's identity comes with CONFIG, after. */
#ifndef SBX_GUEST_WARM_UP_H
#define SBX_GUEST_WARM_UP_H

#include "common/error.h"

/* Takes at most WARM_UP_MS; fails (everything it started ended) when the
 * exec did not exit in time or the process server failed. */
#define WARM_UP_MS 20000
int warm_up_run(sbx_error_t *err);

#endif
