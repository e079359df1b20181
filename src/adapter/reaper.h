/* The idle reaper (contract §6.4): a thread that every REAPER_PERIOD_MS
 * claims the sandboxes reaper_decide() selects and tears them down (or,
 * with idle_action pause, pauses them: reaper_decide_paused()).  It
 * also stops the VMs handed over to it: run's own sandbox is out of the
 * registry before run replies, and its QEMU goes after the reply. */
#ifndef SBX_ADAPTER_REAPER_H
#define SBX_ADAPTER_REAPER_H

#include <stdbool.h>
#include <stdint.h>

#include "adapter/reaper_state.h"
#include "common/error.h"

#define REAPER_PERIOD_MS 10000
/* idle_action pause: pauses one scan makes at most (each writes a guest's
 * RAM out); the others wait for the next scan. */
#define REAPER_PAUSES_PER_SCAN 4

struct sbx_adapter;

int reaper_start(struct reaper *r, struct sbx_adapter *a, sbx_error_t *err);
/* Ends the thread (no-op when not started), once every VM handed over is
 * gone. */
void reaper_stop(struct reaper *r);
/* Has the reaper's thread stop `vm` of sandbox `id`, already detached
 * from the registry, and give back its `mem_mib`.  False when the thread
 * does not run or the handoff cannot be allocated: the caller stops it. */
bool reaper_hand_over(struct reaper *r, void *vm, uint64_t mem_mib, const char *id);
/* One scan: tears down every sandbox due (all of them with `all`), or
 * pauses it (idle_action pause), and stops the paused ones past
 * paused_ttl_secs; returns how many. */
unsigned reaper_scan(struct sbx_adapter *a, bool all);

#endif
