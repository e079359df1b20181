/* The idle reaper's decision (contract §6.4), a pure function so it can be
 * tested with a fake clock; sandbox_registry.c applies it under its lock. */
#ifndef SBX_ADAPTER_REAPER_POLICY_H
#define SBX_ADAPTER_REAPER_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#define REAPER_BUSY_EXTRA_MS 60000u

/* REAP_PAUSE: idle, to be paused (idle_action pause); REAP_EXPIRED: paused
 * past paused_ttl_secs, to be stopped (its state deleted). */
enum reap_decision { REAP_KEEP, REAP_IDLE, REAP_WEDGED, REAP_PAUSE, REAP_EXPIRED };

/* idle_ms = now - last_exec_at.  Idle past its timeout and no exec in
 * flight -> REAP_IDLE; busy but idle past timeout + max_exec_timeout_ms +
 * 60 s -> REAP_WEDGED (a leaked or stuck count); else REAP_KEEP. */
enum reap_decision reaper_decide(uint64_t idle_ms, uint64_t idle_timeout_secs, uint32_t exec_in_flight,
				 uint64_t max_exec_timeout_ms);

/* The decision for a sandbox in a pause state (issue 40).  `paused`: its
 * VM is paused (paused_ms since), REAP_EXPIRED once past paused_ttl_secs
 * (0: never); a sandbox being paused or resumed (`moving`) is kept; else
 * reaper_decide's, with an idle one paused instead of stopped when
 * `pause_idle` (a wedged one is still stopped: pausing waits for its execs
 * to end, which a leaked count never does). */
enum reap_decision reaper_decide_paused(bool paused, bool moving, uint64_t paused_ms, uint64_t paused_ttl_secs,
					bool pause_idle, enum reap_decision running);

#endif
