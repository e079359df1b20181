/* The idle reaper's decision (contract §6.4), a pure function so it can be
 * tested with a fake clock; sandbox_registry.c applies it under its lock. */
#ifndef SBX_ADAPTER_REAPER_POLICY_H
#define SBX_ADAPTER_REAPER_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#define REAPER_BUSY_EXTRA_MS 60000u

enum reap_decision { REAP_KEEP, REAP_IDLE, REAP_WEDGED };

/* idle_ms = now - last_exec_at.  Idle past its timeout and no exec in
 * flight -> REAP_IDLE; busy but idle past timeout + max_exec_timeout_ms +
 * 60 s -> REAP_WEDGED (a leaked or stuck count); else REAP_KEEP. */
enum reap_decision reaper_decide(uint64_t idle_ms, uint64_t idle_timeout_secs, uint32_t exec_in_flight,
				 uint64_t max_exec_timeout_ms);

#endif
