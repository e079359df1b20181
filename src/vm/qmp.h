/* A minimal QMP client (QEMU's JSON monitor) over an inherited socket, for
 * the few commands snapshots need.  QEMU runs a hostile guest, so its
 * answers are read with a bounded line buffer and only matched, never
 * parsed into structures. */
#ifndef SBX_VM_QMP_H
#define SBX_VM_QMP_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define QMP_LINE_MAX 4096

struct qmp {
	int fd; /* owned */
	char buf[QMP_LINE_MAX];
	size_t len;
};

/* Reads the greeting and enters command mode.  Takes ownership of fd (it
 * is closed on failure too). */
int qmp_open(struct qmp *q, int fd, int64_t deadline, sbx_error_t *err);
/* Sends one command (a JSON object, one line) and waits for its answer,
 * skipping events.  pass_fd >= 0 travels with it (SCM_RIGHTS, for
 * getfd).  The "return" line is copied to reply (cap bytes, may be NULL);
 * an "error" answer fails with QEMU's description. */
int qmp_call(struct qmp *q, const char *cmd, int pass_fd, char *reply, size_t cap, int64_t deadline,
	     sbx_error_t *err);
/* Reads past every answer still due (of a call that timed out): sends a
 * command with an id of its own and skips lines up to its answer. */
int qmp_sync(struct qmp *q, int64_t deadline, sbx_error_t *err);
void qmp_close(struct qmp *q);

#endif
