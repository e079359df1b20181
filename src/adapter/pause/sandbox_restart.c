/* Sandboxes that outlive a stop of the daemon (sandbox_restart.h). */
#include "adapter/pause/sandbox_restart.h"

#include <stdlib.h>

#include "adapter/pause/sandbox_pause.h"
#include "common/clock.h"
#include "common/log.h"

unsigned sandbox_restart_pause(struct sbx_adapter *a)
{
	size_t cap = sbx_registry_count(a->reg);
	if (cap == 0)
		return 0;
	char (*ids)[SBX_UUID_STRLEN + 1] = calloc(cap, sizeof(*ids));
	if (ids == NULL) {
		sbx_warn("live_restore: out of memory; the running sandboxes stop with this daemon");
		return 0;
	}
	size_t n = sbx_registry_running_ids(a->reg, ids, cap);
	int64_t t0 = sbx_now_ms();
	unsigned kept = 0;
	/* One at a time: each pause writes its guest's memory out, and two
	 * at once would only share the disk. */
	for (size_t i = 0; i < n; i++) {
		sbx_error_t err = NULL;
		if (sandbox_pause_for_restart(a, ids[i], &err) == 0) {
			kept++;
			continue;
		}
		sbx_warn("sandbox %s: cannot be kept for the next daemon (%s); it stops with this one", ids[i],
			 sbx_error_msg(err));
		sbx_error_free(&err);
	}
	if (n > 0)
		sbx_info("live_restore: paused %u of %zu running sandbox%s for the next daemon in %lld ms", kept, n,
			 n == 1 ? "" : "es", (long long)(sbx_now_ms() - t0));
	free(ids);
	return kept;
}

unsigned sandbox_restart_resume(struct sbx_adapter *a, const struct sandbox_ids *ids)
{
	int64_t t0 = sbx_now_ms();
	unsigned running = 0;
	for (size_t i = 0; i < ids->n; i++) {
		sbx_error_t err = NULL;
		int64_t ready_ms;
		if (sandbox_resume_paused(a, ids->v[i], &ready_ms, &err) == 0) {
			running++;
			continue;
		}
		sbx_warn("sandbox %s: paused by the last daemon as it stopped, not resumed: %s", ids->v[i],
			 sbx_error_msg(err));
		sbx_error_free(&err);
	}
	if (ids->n > 0)
		sbx_info("live_restore: resumed %u of %zu sandbox%s the last daemon paused as it stopped in %lld ms",
			 running, ids->n, ids->n == 1 ? "" : "es", (long long)(sbx_now_ms() - t0));
	return running;
}
