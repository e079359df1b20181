/* A paused sandbox's record beside its VM's state (issue 40 item 4:
 * paused sandboxes outlive the daemon): `<dir>/sandbox.json`, 0600,
 * written whole or not at all before the pause is reported, read by a
 * later daemon (pause/sandbox_adopt.c).  Its clocks are wall-clock ms:
 * the monotonic clock of the daemon that wrote it means nothing to the
 * next one, nor after a reboot. */
#ifndef SBX_ADAPTER_PAUSE_PAUSE_RECORD_H
#define SBX_ADAPTER_PAUSE_PAUSE_RECORD_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "adapter/adapter_state.h"
#include "common/error.h"

#define PAUSE_RECORD_FORMAT 1

/* The record of sb (being paused; `size_bytes` on disk), its background
 * processes (a->procs) and the backend's part `backend`; `resume_next`:
 * the next daemon resumes it (a live_restore shutdown paused it). */
int pause_record_write(struct sbx_adapter *a, const struct sbx_sandbox *sb, uint64_t size_bytes, json_t *backend,
		       bool resume_next, const char *dir, sbx_error_t *err);

/* Writes text as dir/name whole or not at all: dir/tmp_name (0600, new),
 * synced, renamed over the name. */
int pause_record_write_file(const char *dir, const char *name, const char *tmp_name, const char *text,
			    sbx_error_t *err);

struct pause_record {
	struct sbx_sandbox sb; /* name and image malloc'd, ports owned, vm NULL */
	json_t *backend;       /* as pause_record_write got it */
	json_t *procs;         /* [bg_proc_saved, ...]: each checked at its load */
	bool keep_alive;
	bool resume_next;
	/* sb.snapshot_id: the snapshot the sandbox was created from, "" when
	 * none (the record's optional "snapshot_id"). */
};
/* Reads and checks dir's record (hostile: at most max_bytes, every field's
 * type and range): 0, 1 when there is none (a pause that never finished),
 * -1 (S001 naming what is wrong) for one that is not a record. */
int pause_record_read(const char *dir, size_t max_bytes, struct pause_record *r, sbx_error_t *err);
void pause_record_free(struct pause_record *r);

#endif
