/* The control socket's requests (control_ops.h): each checked, its
 * sandbox reference resolved, then run through the adapter's front door
 * (sbx_adapter_call: the contract's checks, S-codes and limits) or, for
 * the streams, control_files.c. */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/adapter.h"
#include "common/base64.h"
#include "common/cleanup.h"
#include "common/cleanup_json.h"
#include "common/log.h"
#include "control/control_ops.h"

/* Runs one function and sends its answer as the final line. */
static int call(const struct control_ctx *c, int fd, const char *fn, json_t *req, sbx_error_t *err)
{
	if (req == NULL)
		return sbx_error_errno(err, ENOMEM, "request");
	json_t *out = NULL;
	int rc = sbx_adapter_call(c->a, fn, req, &out);
	json_decref(req);
	if (rc == 0)
		return control_send_ok(fd, out, err);
	rc = control_send_body_error(fd, out, err);
	json_decref(out);
	return rc;
}

static json_t *status(const struct control_ctx *c)
{
	const struct sbx_config *cfg = c->a->cfg;
	struct sbx_mem_budget *m = &c->a->mem;
	pthread_mutex_lock(&m->lock);
	json_t *mem = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "budget_mib", (json_int_t)m->limit_mib,
				"committed_mib", (json_int_t)m->committed_mib, "templates_mib",
				(json_int_t)m->templates_mib, "vms", (json_int_t)m->vms, "background_logs_bytes",
				(json_int_t)m->logs_bytes, "background_processes", (json_int_t)m->logs);
	pthread_mutex_unlock(&m->lock);
	json_t *pool = json_object();
	for (size_t i = 0; pool != NULL && i < cfg->n_warm_pool; i++)
		json_object_set_new(pool, cfg->warm_pool[i].image, json_integer(cfg->warm_pool[i].count));
	json_t *rows = sbx_registry_rows(c->a->reg, NULL, NULL);
	json_t *ours = json_pack("{s:s, s:o, s:{s:o, s:I}, s:b, s:I, s:I}", "version", SBX_VERSION, "memory", mem,
				 "warm_pool", "images", pool, "max", (json_int_t)cfg->warm_pool_max, "standby",
				 cfg->standby, "sandboxes", (json_int_t)json_array_size(rows), "max_concurrent_sandboxes",
				 (json_int_t)cfg->max_concurrent_sandboxes);
	json_t *st = c->status != NULL ? c->status(c->status_ud) : json_object();
	if (st == NULL || ours == NULL || json_object_update(st, ours) < 0) {
		json_decref(st);
		st = NULL;
	}
	json_decref(ours);
	json_decref(rows);
	return st;
}

/* exec's output goes to the peer as it comes; a peer gone ends the
 * command. */
struct live_out {
	int fd;
	atomic_bool broken;
};

static int send_output(void *ud, int stream, const void *data, size_t len)
{
	struct live_out *o = ud;
	sbx_error_t err = NULL;
	if (!atomic_load(&o->broken) && control_send_output(o->fd, stream, data, len, &err) < 0) {
		atomic_store(&o->broken, true);
		sbx_error_free(&err);
	}
	return 0; /* kept too: the reply's *_truncated flags count it */
}

/* The peer closed its end (killed, Ctrl-C) or a send to it failed.  A
 * peer that only shut down its writing half (SHUT_WR) still reads: not
 * gone. */
static bool peer_gone(void *ud)
{
	struct live_out *o = ud;
	if (atomic_load(&o->broken))
		return true;
	struct pollfd p = { .fd = o->fd, .events = 0 };
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR)) != 0;
}

/* The command's stdin, sent after the request as frames and {"end":
 * true}: as the base64 `stdin` of the exec request.  At most
 * CONTROL_STDIN_MAX bytes (a peer sending more is refused before the
 * command runs). */
static int read_stdin(struct control_reader *r, json_t *req, sbx_error_t *err)
{
	cleanup_free uint8_t *frame = malloc(CONTROL_FRAME_MAX);
	cleanup_free uint8_t *all = NULL;
	size_t len = 0;
	if (frame == NULL)
		return sbx_error_errno(err, ENOMEM, "exec stdin");
	for (;;) {
		ssize_t n = control_read_frame(r, frame, err);
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		if ((size_t)n > CONTROL_STDIN_MAX - len)
			return sbx_error_set(err, EFBIG, "exec: stdin holds more than %u bytes (the daemon's bound)",
					     CONTROL_STDIN_MAX);
		uint8_t *grown = realloc(all, len + (size_t)n);
		if (grown == NULL)
			return sbx_error_errno(err, ENOMEM, "exec stdin");
		all = grown;
		memcpy(all + len, frame, (size_t)n);
		len += (size_t)n;
	}
	cleanup_free char *b64 = len > 0 ? sbx_base64_encode(all, len, err) : strdup("");
	if (b64 == NULL)
		return *err != NULL ? -1 : sbx_error_errno(err, ENOMEM, "exec stdin");
	if (json_object_set_new(req, "stdin", json_string(b64)) < 0)
		return sbx_error_errno(err, ENOMEM, "exec stdin");
	return 0;
}

static int serve_exec(const struct control_ctx *c, struct control_reader *r, int fd, const char *id,
		      const struct control_request *q, sbx_error_t *err)
{
	cleanup_json json_t *req = json_pack("{s:s, s:O}", "sandbox_id", id, "argv", q->argv);
	if (req == NULL)
		return sbx_error_errno(err, ENOMEM, "request");
	if (q->timeout_ms > 0)
		json_object_set_new(req, "timeout_ms", json_integer((json_int_t)q->timeout_ms));
	sbx_error_t ierr = NULL;
	if (q->stdin_frames && read_stdin(r, req, &ierr) < 0) {
		int rc = control_send_error(fd, "usage", sbx_error_msg(ierr), err);
		sbx_error_free(&ierr);
		return rc;
	}
	struct live_out o = { fd, false };
	struct sbx_exec_live live = { send_output, peer_gone, &o };
	json_t *out = NULL;
	int rc = sbx_adapter_exec_live(c->a, req, &live, &out);
	if (rc == 0) {
		/* Already sent, whole, as frames. */
		json_object_del(out, "stdout");
		json_object_del(out, "stderr");
		return control_send_ok(fd, out, err);
	}
	rc = control_send_body_error(fd, out, err);
	json_decref(out);
	return rc;
}

/* port: the sandbox's published ports ([] without any). */
static int serve_port(const struct control_ctx *c, int fd, const char *id, sbx_error_t *err)
{
	json_t *rows = control_rows(c);
	json_t *ports = NULL, *r;
	size_t i;
	json_array_foreach(rows, i, r) {
		const char *sid = json_string_value(json_object_get(r, "sandbox_id"));
		if (sid != NULL && strcmp(sid, id) == 0)
			ports = json_object_get(r, "ports");
	}
	json_t *out = json_pack("{s:s, s:o}", "sandbox_id", id, "ports",
				ports != NULL ? json_incref(ports) : json_array());
	json_decref(rows);
	if (out == NULL)
		return sbx_error_errno(err, ENOMEM, "port reply");
	return control_send_ok(fd, out, err);
}

static int serve_one(const struct control_ctx *c, struct control_reader *r, int fd, const struct control_request *q,
		     sbx_error_t *err)
{
	if (q->op == CONTROL_PS)
		return control_send_ok(fd, json_pack("{s:o}", "sandboxes", control_rows(c)), err);
	if (q->op == CONTROL_STATUS)
		return control_send_ok(fd, status(c), err);
	if (q->op == CONTROL_SNAPSHOTS)
		return call(c, fd, "snapshot::list", json_object(), err);
	if (q->op == CONTROL_SNAPSHOT_RM)
		return call(c, fd, "snapshot::delete", json_pack("{s:s}", "snapshot_id", q->snapshot), err);
	char id[SBX_UUID_STRLEN + 1];
	sbx_error_t rerr = NULL;
	if (control_resolve(c, q->sandbox, id, &rerr) < 0) {
		int rc = control_send_err(fd, rerr, err);
		sbx_error_free(&rerr);
		return rc;
	}
	switch (q->op) {
	case CONTROL_EXEC:
		return serve_exec(c, r, fd, id, q, err);
	case CONTROL_STOP:
		return call(c, fd, "stop", json_pack("{s:s}", "sandbox_id", id), err);
	case CONTROL_STAT:
		return call(c, fd, "fs::stat", json_pack("{s:s, s:s}", "sandbox_id", id, "path", q->path), err);
	case CONTROL_LS:
		return call(c, fd, "fs::ls", json_pack("{s:s, s:s}", "sandbox_id", id, "path", q->path), err);
	case CONTROL_MKDIR:
		return call(c, fd, "fs::mkdir",
			    json_pack("{s:s, s:s, s:s, s:b}", "sandbox_id", id, "path", q->path, "mode",
				      q->mode != NULL ? q->mode : "0755", "parents", true),
			    err);
	case CONTROL_CP_IN:
		return control_cp_in(c, r, fd, id, q, err);
	case CONTROL_CP_OUT:
		return control_cp_out(c, fd, id, q, err);
	case CONTROL_LOGS:
		return control_logs(c, fd, id, q, err);
	case CONTROL_SHELL:
		return control_shell(c, r, fd, id, q, err);
	case CONTROL_PROCESSES:
		return control_send_ok(fd, control_activity(c, id), err);
	case CONTROL_PORT:
		return serve_port(c, fd, id, err);
	default:
		return control_send_error(fd, "usage", "unknown op", err);
	}
}

void control_serve(const struct control_ctx *c, struct control_reader *r, int fd)
{
	sbx_error_t err = NULL;
	json_t *req = NULL;
	struct control_request q;
	int rc = control_read_json(r, &req, &err);
	if (rc == 0)
		return;
	if (rc < 0 || control_request_parse(req, &q, &err) < 0) {
		sbx_error_t serr = NULL;
		if (control_send_error(fd, "usage", sbx_error_msg(err), &serr) < 0)
			sbx_error_free(&serr);
		sbx_error_free(&err);
		json_decref(req);
		return;
	}
	if (serve_one(c, r, fd, &q, &err) < 0)
		sbx_debug("control socket: %s", sbx_error_msg(err));
	sbx_error_free(&err);
	json_decref(req);
}
