/* Paused sandboxes outlive the daemon (issue 40 item 4): each pause
 * writes its sandbox's record beside the VM's state (pause_record.h), a
 * daemon that exits keeps them (sandbox_teardown.c), and the next daemon
 * on the state directory finds them again here, before it takes calls:
 * same ids, names and shape, paused, their background processes with
 * their logs, resumed by the next call as any paused sandbox. */
#ifndef SBX_ADAPTER_PAUSE_SANDBOX_ADOPT_H
#define SBX_ADAPTER_PAUSE_SANDBOX_ADOPT_H

#include "adapter/adapter_state.h"

/* Sandbox ids, grown as needed. */
struct sandbox_ids {
	char (*v)[SBX_UUID_STRLEN + 1];
	size_t n, cap;
};
void sandbox_ids_free(struct sandbox_ids *ids);

/* Adopts every paused sandbox in `<state dir>/paused` that no other
 * daemon holds; removes the state of pauses that never finished; leaves
 * (with a warning) what it cannot adopt.  Returns the count adopted.
 * The ids of those a live_restore shutdown paused go to *resume (when not
 * NULL; sandbox_restart.h resumes them). */
unsigned sandbox_adopt_paused(struct sbx_adapter *a, struct sandbox_ids *resume);
/* Adopts the one paused sandbox in `dir` (a branch of a snapshot,
 * snapshot/snapshot_create.c): it is then listed, paused, under its
 * record's id.  S300 when it cannot be (no record, held elsewhere, a
 * state this build cannot resume), S001 for a damaged record. */
int sandbox_adopt_dir(struct sbx_adapter *a, const char *dir, sbx_error_t *err);

#endif
