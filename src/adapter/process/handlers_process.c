/* process::list, process::logs, process::wait and process::signal (issue
 * 26): what a sandbox's background processes (exec with `background`)
 * did and do.  Every call checks its sandbox as the 23 do (S001 UUID, S002
 * unknown, S004 stopped), then its process (S001 naming an unknown one). */
#include <signal.h>
#include <string.h>

#include "adapter/exec_output.h"
#include "adapter/handlers.h"
#include "adapter/pause/sandbox_pause.h"
#include "adapter/process/process_follow.h"
#include "adapter/process/process_table.h"
#include "adapter/request.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/scodes.h"

/* The sandbox of a request: canonical id, known and not stopped; resumed
 * first when paused (auto_resume). */
static int check_sandbox(struct sbx_adapter *a, const char *id, char uuid[SBX_UUID_STRLEN + 1], sbx_error_t *err)
{
	if (req_sandbox_uuid(id, uuid, err) < 0)
		return -1;
	return sandbox_wake_check(a, uuid, err);
}

/* The fields every call but list has, then the process they name (a new
 * reference) in the sandbox `uuid`. */
static struct bg_proc *lookup(struct sbx_adapter *a, json_t *req, int (*more)(json_t *req, void *ud, sbx_error_t *err),
			      void *ud, char uuid[SBX_UUID_STRLEN + 1], sbx_error_t *err)
{
	const char *id, *pid;
	if (req_object(req, err) < 0 || req_string(req, "sandbox_id", true, &id, err) < 0 ||
	    req_string(req, "process_id", true, &pid, err) < 0 || more(req, ud, err) < 0)
		return NULL;
	if (check_sandbox(a, id, uuid, err) < 0)
		return NULL;
	return process_table_find(a->procs, uuid, pid, err);
}

int sbx_op_process_list(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	const char *id;
	char uuid[SBX_UUID_STRLEN + 1];
	if (req_object(req, &err) < 0 || req_string(req, "sandbox_id", true, &id, &err) < 0 ||
	    check_sandbox(a, id, uuid, &err) < 0)
		return sbx_op_fail(&err, out);
	json_t *rows = process_table_rows(a->procs, uuid);
	*out = rows != NULL ? json_pack("{s:o}", "processes", rows) : NULL;
	return 0;
}

struct logs_args {
	int fd;
	uint64_t offset;
	json_t *follow;
};

static int decode_logs(json_t *req, void *ud, sbx_error_t *err)
{
	struct logs_args *l = ud;
	const char *stream;
	if (req_string(req, "stream", false, &stream, err) < 0 || req_u64(req, "offset", 0, &l->offset, err) < 0)
		return -1;
	if (stream != NULL && strcmp(stream, "stdout") != 0 && strcmp(stream, "stderr") != 0)
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "stream must be \"stdout\" or \"stderr\", got \"%s\"",
				       stream);
	l->fd = stream != NULL && strcmp(stream, "stderr") == 0 ? 2 : 1;
	l->follow = json_object_get(req, "follow");
	if (json_is_null(l->follow))
		l->follow = NULL;
	if (l->follow != NULL && !json_is_object(l->follow))
		return req_type_error(l->follow, "follow", "a StreamChannelRef object", err);
	return 0;
}

static json_t *logs_reply(const struct bg_slice *s, sbx_error_t *err)
{
	size_t len = 0;
	cleanup_free char *text = utf8_lossy(s->data, s->len, &len, err);
	if (text == NULL)
		return NULL;
	return json_pack("{s:s%, s:I, s:b, s:s}", "data", text, len, "next_offset", (json_int_t)s->next, "dropped",
			 s->dropped, "state", s->running ? "running" : "exited");
}

int sbx_op_process_logs(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	struct logs_args l = { 0 };
	char uuid[SBX_UUID_STRLEN + 1];
	struct bg_proc *p = lookup(a, req, decode_logs, &l, uuid, &err);
	if (p == NULL)
		return sbx_op_fail(&err, out);
	struct bg_slice s;
	int rc = bg_proc_slice(p, l.fd, l.offset, PROC_LOGS_MAX_REPLY, &s, &err);
	if (rc == 0)
		*out = logs_reply(&s, &err);
	if (rc == 0 && *out != NULL && l.follow != NULL && process_follow_start(a, uuid, p, l.fd, s.next, l.follow, &err) < 0) {
		json_decref(*out);
		*out = NULL;
	}
	free(s.data);
	bg_proc_unref(p);
	return *out != NULL ? 0 : sbx_op_fail(&err, out);
}

static int decode_wait(json_t *req, void *ud, sbx_error_t *err)
{
	return req_u64(req, "timeout_ms", 30000, ud, err);
}

int sbx_op_process_wait(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	uint64_t timeout_ms = 0;
	char uuid[SBX_UUID_STRLEN + 1];
	struct bg_proc *p = lookup(a, req, decode_wait, &timeout_ms, uuid, &err);
	if (p == NULL)
		return sbx_op_fail(&err, out);
	bg_proc_wait(p, sbx_now_ms() + (int64_t)exec_effective_timeout_ms(timeout_ms, a->cfg->max_exec_timeout_ms));
	*out = bg_proc_state(p);
	bg_proc_unref(p);
	return 0;
}

static int decode_signal(json_t *req, void *ud, sbx_error_t *err)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = { { "TERM", SIGTERM }, { "KILL", SIGKILL }, { "INT", SIGINT }, { "HUP", SIGHUP } };
	const char *name;
	if (req_string(req, "signal", true, &name, err) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(name, names[i].name) == 0) {
			*(int *)ud = names[i].sig;
			return 0;
		}
	}
	return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "signal must be TERM, KILL, INT or HUP, got \"%s\"", name);
}

int sbx_op_process_signal(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	int sig = 0;
	bool sent = false;
	char uuid[SBX_UUID_STRLEN + 1];
	struct bg_proc *p = lookup(a, req, decode_signal, &sig, uuid, &err);
	if (p == NULL)
		return sbx_op_fail(&err, out);
	int rc = bg_proc_signal(p, sig, &sent, &err);
	bg_proc_unref(p);
	if (rc < 0)
		return sbx_op_fail(&err, out);
	*out = json_pack("{s:b}", "sent", sent);
	return 0;
}
