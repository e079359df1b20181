/* WARM_UP (proto.h), before CONFIG: PID 1 runs `true`, then the host's
 * argv (the image's interpreter, e.g. python3 -I -B -c pass) if any, each
 * once through its own process server (guest/dispatch.h), served to
 * itself over a socketpair by a child, as the host's first exec will run:
 * the user lookup, the exec's cgroup, fork and exec, the pipes, the
 * reaping.  Under TCG a restored VM starts with no translated code; a
 * parked VM of a warm pool that did this answers its CONFIG, its first
 * exec and its interpreter's start with those paths translated.
 * Nothing of it stays: the children and everything they started are gone
 * and reaped, the exec's cgroup removed, nothing written but what the
 * kernel counts (the argv must write nothing: the host picks it so); the
 * sandbox's identity comes with CONFIG, after. */
#ifndef SBX_GUEST_WARM_UP_H
#define SBX_GUEST_WARM_UP_H

#include "common/error.h"

/* Takes at most WARM_UP_MS for both; fails (everything it started ended)
 * when an exec did not exit 0 in time or a process server failed; argv
 * does not run when `true` failed.  argv: NULL or empty for `true` only. */
#define WARM_UP_MS 20000
int warm_up_run(char *const *argv, sbx_error_t *err);

#endif
