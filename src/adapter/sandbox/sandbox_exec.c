/* exec (contract §7.4) and the file writes of run, on an admitted sandbox. */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/request.h"
#include "adapter/sandbox/exec_stream.h"
#include "adapter/sandbox/sandbox.h"
#include "common/base64.h"
#include "common/cleanup.h"
#include "common/cleanup_json.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/scodes.h"

struct cancel_ctx {
	struct sbx_registry *reg;
	struct sbx_sandbox *sb;
	bool (*caller_gone)(void *ud);
	void *caller_ud;
	atomic_bool gone; /* the caller went away (not a stop) */
};

/* The sandbox is being stopped or paused, or the caller went away. */
static bool cancelled(void *ud)
{
	struct cancel_ctx *c = ud;
	if (sbx_registry_stopped(c->reg, c->sb) || sbx_registry_pausing(c->reg, c->sb))
		return true;
	if (!atomic_load(&c->gone) && c->caller_gone != NULL && c->caller_gone(c->caller_ud))
		atomic_store(&c->gone, true);
	return atomic_load(&c->gone);
}

/* A NULL-terminated view of a JSON string array (strings borrowed). */
/* The guest wants an absolute cwd; a relative workdir resolves against the
 * supervisor cwd `/` like every guest path (contract §7.8), so "tmp" is
 * "/tmp".  "" is unset (*out NULL): the image's WorkingDir or `/`. */
static int guest_cwd(const char *workdir, char **out, sbx_error_t *err)
{
	*out = NULL;
	if (workdir == NULL || workdir[0] == '\0')
		return 0;
	if (asprintf(out, "%s%s", workdir[0] == '/' ? "" : "/", workdir) < 0) {
		*out = NULL;
		return sbx_error_errno(err, ENOMEM, "exec workdir");
	}
	return 0;
}

/* One stream as a reply carries it.  By length, not strlen(): output may
 * hold NUL bytes (U+0000 is valid UTF-8) and must not be cut at the first. */
static json_t *output_string(const struct exec_output *o, sbx_error_t *err)
{
	size_t len = 0;
	cleanup_free char *text = utf8_lossy(o->data, o->len, &len, err);
	if (text == NULL)
		return NULL;
	json_t *j = json_stringn(text, len);
	if (j == NULL)
		sbx_error_errno(err, ENOMEM, "exec output");
	return j;
}

/* The output of an exec as its reply carries it: {stdout, stderr,
 * stdout_truncated, stderr_truncated}; also what a timed-out command had
 * printed, for its S200 envelope. */
static json_t *output_fields(const struct sbx_exec_result *r, sbx_error_t *err)
{
	json_t *out = output_string(&r->out, err);
	json_t *errs = out != NULL ? output_string(&r->err, err) : NULL;
	if (errs == NULL) {
		json_decref(out);
		return NULL;
	}
	json_t *j = json_pack("{s:o, s:o, s:b, s:b}", "stdout", out, "stderr", errs, "stdout_truncated",
			      r->out.truncated, "stderr_truncated", r->err.truncated);
	if (j == NULL)
		sbx_error_errno(err, ENOMEM, "exec output");
	return j;
}

static json_t *reply(const struct sbx_exec_result *r, sbx_error_t *err)
{
	cleanup_json json_t *o = output_fields(r, err);
	if (o == NULL)
		return NULL;
	json_t *j = json_pack("{s:O, s:O, s:i, s:b, s:I, s:b, s:O, s:O}", "stdout", json_object_get(o, "stdout"),
			      "stderr", json_object_get(o, "stderr"), "exit_code", r->exit_code, "timed_out", 0,
			      "duration_ms", (json_int_t)r->duration_ms, "success", r->exit_code == 0,
			      "stdout_truncated", json_object_get(o, "stdout_truncated"), "stderr_truncated",
			      json_object_get(o, "stderr_truncated"));
	if (j == NULL)
		sbx_error_errno(err, ENOMEM, "exec reply");
	return j;
}

static json_t *run_admitted(struct sbx_adapter *a, struct sbx_sandbox *sb, const struct sandbox_exec_args *x,
			    json_t **printed, sbx_error_t *err)
{
	cleanup_free unsigned char *in = NULL;
	size_t in_len = 0;
	/* Checked after admission (contract order). */
	if (x->stdin_b64 != NULL && x->stdin_b64[0] != '\0') {
		sbx_error_t berr = NULL;
		in = sbx_base64_decode(x->stdin_b64, strlen(x->stdin_b64), &in_len, &berr);
		if (in == NULL) {
			sbx_error_scode(err, SBX_S_INVALID_REQUEST, "stdin base64 decode: %s", sbx_error_msg(berr));
			sbx_error_free(&berr);
			return NULL;
		}
	}
	if (a->backend.ops == NULL || sb->vm == NULL)
		return sbx_error_scode(err, SBX_S_VM_BOOT, SBX_NO_VM_DETAIL), NULL;
	cleanup_free char *cwd = NULL;
	if (guest_cwd(x->workdir, &cwd, err) < 0)
		return NULL;
	cleanup_free char **argv = req_strv_view(x->argv, "argv", err);
	cleanup_free char **env = argv != NULL ? req_strv_view(x->env, "env", err) : NULL;
	if (env == NULL)
		return NULL;
	struct exec_stream st;
	if (exec_stream_open(&st, &a->streams, x->stream, x->on_output, x->output_ud, err) < 0)
		return NULL;
	struct cancel_ctx cc = { a->reg, sb, x->caller_gone, x->output_ud, false };
	struct sbx_exec_request req = {
		.argv = argv,
		.env = env,
		.cwd = cwd,
		.stdin_data = in,
		.stdin_len = in_len,
		.timeout_ms = exec_effective_timeout_ms(x->timeout_ms, a->cfg->max_exec_timeout_ms),
		.cancelled = cancelled,
		.cancel_ud = &cc,
		.on_output = x->stream != NULL ? exec_stream_output : x->on_output,
		.output_ud = x->stream != NULL ? (void *)&st : x->output_ud,
	};
	if (exec_stream_watch(&st, sbx_now_ms() + (int64_t)(req.timeout_ms > INT32_MAX ? INT32_MAX : req.timeout_ms),
			      cancelled, &cc, err) < 0) {
		exec_stream_close(&st, "the exec did not start");
		return NULL;
	}
	struct sbx_exec_result res;
	exec_output_init(&res.out, EXEC_OUTPUT_CAP);
	exec_output_init(&res.err, EXEC_OUTPUT_CAP);
	json_t *j = NULL;
	int rc = a->backend.ops->exec(sb->vm, &req, &res, err);
	/* The channels end before the reply goes: a reader has every byte
	 * once the exec has answered. */
	if (rc < 0 && atomic_load(&cc.gone) && *err != NULL && strcmp((*err)->scode, SBX_S_STOPPED) == 0) {
		sbx_error_free(err);
		sbx_error_scode(err, SBX_S_STOPPED, "the caller went away while the command ran: it was killed");
	} else if (rc < 0 && *err != NULL && strcmp((*err)->scode, SBX_S_STOPPED) == 0 &&
		   sbx_registry_pausing(a->reg, sb) && !sbx_registry_stopped(a->reg, sb)) {
		sbx_error_free(err);
		sbx_error_scode(err, SBX_S_STOPPED, "sandbox %s was paused while the command ran: it was killed", sb->id);
	}
	exec_stream_close(&st, rc == 0 ? NULL : sbx_error_msg(*err));
	if (rc == 0) {
		j = reply(&res, err);
	} else if (printed != NULL && *err != NULL && strcmp((*err)->scode, SBX_S_EXEC_TIMEOUT) == 0) {
		/* Without it the envelope still says S200: the output is lost,
		 * not the timeout. */
		sbx_error_t perr = NULL;
		if ((*printed = output_fields(&res, &perr)) == NULL)
			sbx_warn("exec: the timed-out command's output is left out: %s", sbx_error_msg(perr));
		sbx_error_free(&perr);
	}
	exec_output_free(&res.out);
	exec_output_free(&res.err);
	return j;
}

json_t *sandbox_exec(struct sbx_adapter *a, const char *id, const struct sandbox_exec_args *x, json_t **printed,
		     sbx_error_t *err)
{
	if (printed != NULL)
		*printed = NULL;
	struct sbx_sandbox *sb = sbx_registry_exec_begin(a->reg, id, a->cfg->max_concurrent_exec_per_sandbox, err);
	if (sb == NULL)
		return NULL;
	json_t *j = run_admitted(a, sb, x, printed, err);
	/* Asked while the exec slot keeps the VM from being detached. */
	bool dead = j == NULL && sandbox_vm_dead(a, sb);
	sbx_registry_exec_end(a->reg, sb);
	if (dead)
		sandbox_remove_dead(a, id);
	return j;
}

int sandbox_write_file(struct sbx_adapter *a, const char *id, const char *path, uint32_t mode, const char *data,
		       size_t len, sbx_error_t *err)
{
	struct sbx_sandbox *sb = sbx_registry_exec_begin(a->reg, id, a->cfg->max_concurrent_exec_per_sandbox, err);
	if (sb == NULL)
		return -1;
	int rc;
	if (a->backend.ops == NULL || sb->vm == NULL)
		rc = sbx_error_scode(err, SBX_S_VM_BOOT, SBX_NO_VM_DETAIL);
	else
		rc = a->backend.ops->write_file(sb->vm, path, mode, true, data, len, err);
	bool dead = rc < 0 && sandbox_vm_dead(a, sb);
	sbx_registry_exec_end(a->reg, sb);
	if (dead)
		sandbox_remove_dead(a, id);
	return rc;
}
