#include "adapter/reaper_policy.h"

/* a + b without wrapping: a huge timeout means "never". */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

enum reap_decision reaper_decide(uint64_t idle_ms, uint64_t idle_timeout_secs, uint32_t exec_in_flight,
				 uint64_t max_exec_timeout_ms)
{
	uint64_t limit = idle_timeout_secs > UINT64_MAX / 1000 ? UINT64_MAX : idle_timeout_secs * 1000;
	if (idle_ms <= limit)
		return REAP_KEEP;
	if (exec_in_flight == 0)
		return REAP_IDLE;
	uint64_t grace = sat_add(max_exec_timeout_ms, REAPER_BUSY_EXTRA_MS);
	return idle_ms > sat_add(limit, grace) ? REAP_WEDGED : REAP_KEEP;
}

enum reap_decision reaper_decide_paused(bool paused, bool moving, uint64_t paused_ms, uint64_t paused_ttl_secs,
					bool pause_idle, enum reap_decision running)
{
	if (moving)
		return REAP_KEEP;
	if (paused) {
		uint64_t ttl = paused_ttl_secs > UINT64_MAX / 1000 ? UINT64_MAX : paused_ttl_secs * 1000;
		return paused_ttl_secs > 0 && paused_ms > ttl ? REAP_EXPIRED : REAP_KEEP;
	}
	return running == REAP_IDLE && pause_idle ? REAP_PAUSE : running;
}
