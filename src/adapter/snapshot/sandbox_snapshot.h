/* Snapshots of live sandboxes and sandboxes created from them (issue 39).
 * A capture is a pause of the source whose state is branched
 * (backend.h branch_paused) before the source resumes from it: the source
 * stands still meanwhile (paused_ms), its foreground execs, background
 * processes and terminals carry on after, and calls made meanwhile wait.
 * A sandbox created from a snapshot is a second branch, adopted as a
 * paused sandbox of a new id (pause/sandbox_adopt.h) and resumed: a
 * resume reseeds the guest's random pool, sets its clock and closes the
 * connections of its network, and the processes no record names (a
 * foreground exec, a terminal) are killed. */
#ifndef SBX_ADAPTER_SNAPSHOT_SANDBOX_SNAPSHOT_H
#define SBX_ADAPTER_SNAPSHOT_SANDBOX_SNAPSHOT_H

#include <stdint.h>

#include "adapter/adapter_state.h"
#include "adapter/sandbox/sandbox.h"
#include "adapter/snapshot/snapshot_store.h"
#include "common/error.h"

/* Snapshots running (or paused: resumed first, as any call) sandbox `id`
 * (canonical) as *m (its record, freed by the caller), named `name` (may
 * be NULL).  S002/S004 as exec; S001 while it is being paused, resumed or
 * captured; S400 past snapshot_store_mb or the state directory's free
 * space; S300 when the VM layer cannot (the source then runs on, unless
 * it died). */
int sandbox_snapshot(struct sbx_adapter *a, const char *id, const char *name, struct snapshot_meta *m,
		     int64_t *paused_ms, int64_t *duration_ms, sbx_error_t *err);

/* create with `snapshot` (c->image unset): S001 for an unknown snapshot,
 * cpus or memory_mb other than the snapshot's; S100 when its image no
 * longer passes image_allowlist; S400 as a resume; S300 when this build
 * cannot run it.  Writes the new id; *image gets the snapshot's image
 * (malloc'd). */
int sandbox_create_from_snapshot(struct sbx_adapter *a, const struct sandbox_create_args *c, const char *snapshot,
				 bool keep_alive, char id[SBX_UUID_STRLEN + 1], char **image, sbx_error_t *err);

/* Tells the registry what the snapshots hold now (after one is taken or
 * deleted, and at the start): a pause counts it against
 * snapshot_store_mb. */
void sandbox_snapshot_account(struct sbx_adapter *a);

/* Counts one admitted `op` (snapshot, create, fork) begun at t0 (ms) with
 * its outcome rc; a success's duration goes to the histogram. */
void sandbox_snapshot_count(const char *op, int rc, int64_t t0);

#endif
