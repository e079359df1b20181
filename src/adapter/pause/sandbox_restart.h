/* live_restore (issue 40 item 4, the part built): sandboxes that outlive
 * a stop of the daemon (SIGTERM: `systemctl restart`, a package upgrade).
 * The daemon that stops pauses each running sandbox (sandbox_pause.h)
 * with a record that says the next daemon resumes it; the next daemon
 * finds them again (sandbox_adopt.h) and resumes them once it takes
 * calls: same ids, files, memory and background processes, with the
 * pause's effects (TCP connections and terminals closed, listening
 * sockets listening again).  A daemon killed (SIGKILL, a crash, the OOM
 * killer) cannot pause: its running sandboxes are lost as before; its
 * paused ones are not. */
#ifndef SBX_ADAPTER_PAUSE_SANDBOX_RESTART_H
#define SBX_ADAPTER_PAUSE_SANDBOX_RESTART_H

#include "adapter/adapter_state.h"
#include "adapter/pause/sandbox_adopt.h"

/* Pauses every running sandbox of `a` for the next daemon, one at a time;
 * one that cannot be (a limit, a VM that cannot pause, its state not
 * kept) stops with this daemon, in one warning each.  Returns how many
 * were kept. */
unsigned sandbox_restart_pause(struct sbx_adapter *a);

/* Resumes the sandboxes `ids` (sandbox_adopt_paused's), one at a time;
 * one that cannot be resumed stays paused (S400: no memory or slot for
 * it) or is removed (its VM could not start), in one warning each.
 * Returns how many run. */
unsigned sandbox_restart_resume(struct sbx_adapter *a, const struct sandbox_ids *ids);

#endif
