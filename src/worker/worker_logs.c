/* worker::logs (contract §7.19): the last `tail` lines (default 200, at
 * most WORKER_LOGS_MAX_LINES) of the worker process's stdout and stderr,
 * each at most WORKER_LOGS_MAX_BYTES, lossy UTF-8.  The files outlive stop
 * and go with destroy. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "adapter/request.h"
#include "adapter/exec_output.h"
#include "common/scodes.h"
#include "worker/log_tail.h"
#include "worker/worker_launch.h"
#include "worker/worker_ops.h"

#define WORKER_LOGS_DEFAULT_LINES 200
#define WORKER_LOGS_MAX_LINES 10000
#define WORKER_LOGS_MAX_BYTES (1024u * 1024u)

static json_t *read_stream(const char *dir, const char *file, size_t lines, sbx_error_t *err)
{
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/" WORKER_LOG_DIR "/%s", dir, file);
	char *raw;
	size_t len, out_len;
	if (log_tail_read(path, lines, WORKER_LOGS_MAX_BYTES, &raw, &len, err) < 0)
		return NULL;
	char *text = utf8_lossy((const uint8_t *)raw, len, &out_len, err);
	free(raw);
	if (text == NULL)
		return NULL;
	json_t *s = json_stringn(text, out_len);
	free(text);
	if (s == NULL)
		sbx_error_errno(err, ENOMEM, "logs");
	return s;
}

int worker_op_logs(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *name = json_string_value(json_object_get(req, "worker"));
	uint64_t tail;
	char dir[PATH_MAX];
	struct stat st;
	if (req_u64(req, "tail", WORKER_LOGS_DEFAULT_LINES, &tail, &err) < 0 ||
	    worker_dir(name, dir, sizeof(dir), &err) < 0)
		return sbx_op_fail(&err, out);
	if (stat(dir, &st) < 0) {
		if (errno == ENOENT)
			sbx_error_scode(&err, SBX_S_NOT_PREPARED, "worker %s is not prepared: it has no logs", name);
		else
			sbx_error_errno(&err, errno, "worker %s", name);
		return sbx_op_fail(&err, out);
	}
	size_t lines = tail > WORKER_LOGS_MAX_LINES ? WORKER_LOGS_MAX_LINES : (size_t)tail;
	json_t *o = read_stream(dir, "stdout.log", lines, &err);
	json_t *e = o != NULL ? read_stream(dir, "stderr.log", lines, &err) : NULL;
	if (e == NULL) {
		json_decref(o);
		return sbx_op_fail(&err, out);
	}
	*out = json_pack("{s:s, s:o, s:o}", "worker", name, "stdout", o, "stderr", e);
	return 0;
}
