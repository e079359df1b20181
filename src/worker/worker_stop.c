/* worker::stop and worker::destroy (contract §7.19).  stop: SIGTERM to the
 * worker process, its VM killed after timeout_secs (default 10), data and
 * logs kept; idempotent.  destroy: stop, then the worker's state directory
 * (record, data disk, logs) goes; idempotent. */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "adapter/request.h"
#include "common/log.h"
#include "common/scodes.h"
#include "worker/worker_ops.h"
#include "worker/worker_record.h"
#include "worker/worker_table.h"

#define STOP_DEFAULT_SECS 10
#define STOP_MAX_SECS 3600

/* Stops the worker's VM if it runs; *known is false when the daemon never
 * started it. */
static void stop_live(struct worker_table *t, const char *name, uint64_t secs, bool forget, bool *known)
{
	*known = false;
	if (t == NULL)
		return;
	pthread_mutex_lock(&t->lock);
	struct worker_live *w = worker_table_find(t, name);
	if (w != NULL) {
		*known = w->state != WORKER_ABSENT;
		worker_stop_locked(t, w, (int64_t)secs * 1000);
		if (forget) {
			w->has_exit = false;
			w->started_at = 0;
			worker_set_state(t, w, WORKER_ABSENT);
		}
	}
	pthread_mutex_unlock(&t->lock);
}

int worker_op_stop(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *name = json_string_value(json_object_get(req, "worker"));
	uint64_t secs;
	if (req_u64(req, "timeout_secs", STOP_DEFAULT_SECS, &secs, &err) < 0 || worker_name_check(name, &err) < 0)
		return sbx_op_fail(&err, out);
	if (secs > STOP_MAX_SECS)
		secs = STOP_MAX_SECS;
	bool known;
	stop_live(a->worker_vms, name, secs, false, &known);
	struct worker_record r;
	if (!known && worker_record_load(name, &r, &err) < 0) {
		if (err->errnum == ENOENT) {
			sbx_error_free(&err);
			sbx_error_scode(&err, SBX_S_NOT_PREPARED, "worker %s is not prepared", name);
		}
		return sbx_op_fail(&err, out);
	}
	if (!known)
		worker_record_free(&r);
	*out = json_pack("{s:s, s:b}", "worker", name, "stopped", 1);
	return 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	if (remove(path) < 0 && errno != ENOENT)
		sbx_warn("destroy: %s: %s", path, strerror(errno));
	return 0;
}

int worker_op_destroy(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *name = json_string_value(json_object_get(req, "worker"));
	char dir[PATH_MAX];
	if (worker_dir(name, dir, sizeof(dir), &err) < 0)
		return sbx_op_fail(&err, out);
	bool known;
	stop_live(a->worker_vms, name, STOP_DEFAULT_SECS, true, &known);
	if (nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS) < 0 && errno != ENOENT) {
		sbx_error_errno(&err, errno, "destroy worker %s: %s", name, dir);
		return sbx_op_fail(&err, out);
	}
	if (access(dir, F_OK) == 0) {
		sbx_error_set(&err, EBUSY, "destroy worker %s: %s could not be removed entirely", name, dir);
		return sbx_op_fail(&err, out);
	}
	sbx_info("worker %s destroyed", name);
	*out = json_pack("{s:s, s:b}", "worker", name, "destroyed", 1);
	return 0;
}
