/* serve's tie to the engine that spawned it (iii-protocol.md §1.4): EOF on
 * the pipe III_LIFELINE_FD names, or the process III_ENGINE_PID names gone,
 * means the engine died, and serve stops as on SIGTERM (its VMs with it). */
#ifndef SBX_CMD_SERVE_LIFELINE_H
#define SBX_CMD_SERVE_LIFELINE_H

#include "common/error.h"

/* Watches whichever of the two variables is set (neither: nothing to do)
 * from a thread of its own, which sends this process SIGTERM once the
 * engine is gone.  A value that names no open fd or no live process is
 * refused: the caller exits rather than outlive an engine it cannot watch. */
int lifeline_start(sbx_error_t *err);

#endif
