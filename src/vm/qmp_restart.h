/* Restarting a VM's vCPUs after a save that failed part way (a pause, a
 * template's snapshot): whatever was sent goes on after a call timed out,
 * so a bare `cont` is not enough. */
#ifndef SBX_VM_QMP_RESTART_H
#define SBX_VM_QMP_RESTART_H

#include <stdint.h>

#include "common/error.h"
#include "vm/qmp.h"

/* The time a restart gets of its own, past the failed call's deadline:
 * the VM must run on. */
#define QMP_RESTART_MS 10000

/* Reads past the answers still due, cancels the migration and waits until
 * it no longer runs, then sends `cont`; by `limit`.  Also right after a
 * completed migration (there `cont` takes the disks back). */
int qmp_restart_vcpus(struct qmp *q, int64_t limit, sbx_error_t *err);

#endif
