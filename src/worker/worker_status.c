/* worker::status (contract §7.19): a live entry's state, else `prepared`
 * when the worker's record exists (also after a daemon restart: worker VMs
 * die with the daemon), else `absent`. */
#include <errno.h>
#include <time.h>

#include "common/scodes.h"
#include "worker/worker_ops.h"
#include "worker/worker_record_file.h"
#include "worker/worker_table.h"

/* started_at as RFC 3339 UTC. */
static json_t *rfc3339(int64_t secs)
{
	time_t t = (time_t)secs;
	struct tm tm;
	char buf[32];
	if (gmtime_r(&t, &tm) == NULL || strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		return NULL;
	return json_string(buf);
}

/* prepared or absent, from the record on disk. */
static int on_disk(const char *name, enum worker_state *s, sbx_error_t *err)
{
	struct worker_record r;
	if (worker_record_load(name, &r, err) == 0) {
		worker_record_free(&r);
		*s = WORKER_PREPARED;
		return 0;
	}
	if ((*err)->errnum != ENOENT)
		return -1;
	sbx_error_free(err);
	*s = WORKER_ABSENT;
	return 0;
}

int worker_op_status(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *name = json_string_value(json_object_get(req, "worker"));
	struct worker_table *t = a->worker_vms;
	enum worker_state s = WORKER_ABSENT;
	struct worker_live copy = { 0 };
	if (t != NULL) {
		pthread_mutex_lock(&t->lock);
		struct worker_live *w = worker_table_find(t, name);
		if (w != NULL)
			copy = *w;
		pthread_mutex_unlock(&t->lock);
	}
	s = copy.state;
	if (s == WORKER_ABSENT || s == WORKER_PREPARED) {
		if (on_disk(name, &s, &err) < 0)
			return sbx_op_fail(&err, out);
	}
	*out = json_pack("{s:s, s:s}", "worker", name, "state", worker_state_name(s));
	if (*out == NULL || s == WORKER_ABSENT || s == WORKER_PREPARED)
		return 0;
	if (copy.pid > 0)
		json_object_set_new(*out, "pid", json_integer(copy.pid));
	if (copy.has_exit)
		json_object_set_new(*out, "exit_code", json_integer(copy.exit_code));
	if (copy.started_at > 0) {
		json_t *at = rfc3339(copy.started_at);
		if (at != NULL)
			json_object_set_new(*out, "started_at", at);
	}
	return 0;
}
