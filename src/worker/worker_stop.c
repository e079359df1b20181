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
#include "worker/worker_record_file.h"
#include "worker/worker_table.h"

#define STOP_DEFAULT_SECS 10
#define STOP_MAX_SECS 3600

/* Stops the worker's VM if it runs; *known is false when the daemon never
 * started it. */
static void stop_live(struct worker_table *t, const char *name, uint64_t secs, bool *known)
{
	*known = false;
	if (t == NULL)
		return;
	pthread_mutex_lock(&t->lock);
	struct worker_live *w = worker_table_find(t, name);
	if (w != NULL) {
		*known = w->state != WORKER_ABSENT;
		worker_stop_locked(t, w, (int64_t)secs * 1000);
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
	stop_live(a->worker_vms, name, secs, &known);
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

static int remove_dir(const char *name, const char *dir, sbx_error_t *err)
{
	if (nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS) < 0 && errno != ENOENT)
		return sbx_error_errno(err, errno, "destroy worker %s: %s", name, dir);
	if (access(dir, F_OK) == 0)
		return sbx_error_set(err, EBUSY, "destroy worker %s: %s could not be removed entirely", name, dir);
	return 0;
}

int worker_op_destroy(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *name = json_string_value(json_object_get(req, "worker"));
	char dir[PATH_MAX];
	if (worker_dir(name, dir, sizeof(dir), &err) < 0)
		return sbx_op_fail(&err, out);
	struct worker_table *t = a->worker_vms;
	struct worker_live *w = NULL;
	if (t != NULL) {
		/* The entry stays busy while its files go: a start waits, then
		 * finds the worker unprepared. */
		pthread_mutex_lock(&t->lock);
		w = worker_table_get(t, name, &err);
		if (w != NULL) {
			worker_stop_locked(t, w, (int64_t)STOP_DEFAULT_SECS * 1000);
			w->busy = true;
		}
		pthread_mutex_unlock(&t->lock);
		if (w == NULL)
			return sbx_op_fail(&err, out);
	}
	int rc = remove_dir(name, dir, &err);
	if (t != NULL) {
		pthread_mutex_lock(&t->lock);
		w->busy = false;
		w->has_exit = false;
		w->started_at = 0;
		worker_set_state(t, w, WORKER_ABSENT);
		pthread_mutex_unlock(&t->lock);
	}
	if (rc < 0)
		return sbx_op_fail(&err, out);
	sbx_info("worker %s destroyed", name);
	*out = json_pack("{s:s, s:b}", "worker", name, "destroyed", 1);
	return 0;
}
