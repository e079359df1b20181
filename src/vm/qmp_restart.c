/* Why a bare `cont` is not enough after a failed save: a `stop` whose
 * answer did not come in time still stops the vCPUs after the `cont`, and
 * a migration still under way stops them again at its end (QEMU's
 * post-migrate state), leaving a VM that looks alive and never runs. */
#include "vm/qmp_restart.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"

#define POLL_US 20000

/* Waits until no migration runs: cancelled, completed, failed or none. */
static int migration_settled(struct qmp *q, int64_t limit, sbx_error_t *err)
{
	char reply[QMP_LINE_MAX];
	for (;;) {
		if (qmp_call(q, "{\"execute\": \"query-migrate\"}", -1, reply, sizeof(reply), limit, err) < 0)
			return -1;
		const char *status = strstr(reply, "\"status\": \"");
		if (status == NULL || strncmp(status + 11, "cancelled\"", 10) == 0 ||
		    strncmp(status + 11, "completed\"", 10) == 0 || strncmp(status + 11, "failed\"", 7) == 0)
			return 0;
		if (sbx_now_ms() >= limit)
			return sbx_error_set(err, ETIMEDOUT, "the migration did not end");
		usleep(POLL_US);
	}
}

int qmp_restart_vcpus(struct qmp *q, int64_t limit, sbx_error_t *err)
{
	if (qmp_sync(q, limit, err) < 0)
		return -1;
	if (qmp_call(q, "{\"execute\": \"migrate_cancel\"}", -1, NULL, 0, limit, err) < 0)
		return -1;
	if (migration_settled(q, limit, err) < 0)
		return -1;
	return qmp_call(q, "{\"execute\": \"cont\"}", -1, NULL, 0, limit, err);
}
