#include "adapter/scode.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/adapter_state.h"
#include "common/cleanup.h"
#include "common/log.h"
#include "common/scodes.h"
#include "proto/proto.h"

#define NOTE_GONE "the sandbox is gone; call sandbox::create first"
#define NOTE_PLATFORM "platform-level failure; not auto-recoverable"
#define NOTE_PARENTS                                                                                        \
	"merge `fix` into the original request and resubmit: `parents: true` auto-creates missing intermediate " \
	"directories"
/* S003's note explains why waiting rarely helps: the slot is held by the
 * running process, not by a queue. */
#define NOTE_EXEC_CAP                                                                                         \
	"execs run concurrently but are capped per sandbox (max_concurrent_exec_per_sandbox, default 4) because a " \
	"1 vCPU / 512 MB guest runs out of memory. Waiting will NOT free a slot held by a long-running or "         \
	"FOREGROUND process (a server, `npm install`, a build/watch): it holds until the process exits or hits "    \
	"its timeout_ms. Detach such processes with `nohup <cmd> > /tmp/out.log 2>&1 &` and read the log with "     \
	"sandbox::fs::read, or sandbox::stop + sandbox::create to reset. Retry-after-wait only helps for a short "  \
	"command."

#define NOTE_PAUSED                                                                                        \
	"the sandbox is paused, not gone: call sandbox-libkrun::resume (or set auto_resume: true), then retry"

static const struct sbx_scode table[] = {
	{ SBX_S_INVALID_REQUEST, "validation", false, "invalid request: ", "see message: examples are inline" },
	{ SBX_S_NOT_FOUND, "validation", false, "sandbox not found: ", NOTE_GONE },
	{ SBX_S_EXEC_CAP, "validation", false, "", NOTE_EXEC_CAP },
	{ SBX_S_STOPPED, "validation", false, "sandbox already stopped: ", NOTE_GONE },
	{ SBX_S_IMAGE_UNKNOWN, "config", false, "",
	  "set `image` to a value listed in the message or add a custom_images entry in iii.config.yaml" },
	{ SBX_S_IMAGE_MISSING, "internal", false, "",
	  "operator action required: run `iii worker add <image-ref>` on the host" },
	{ SBX_S_TRANSIENT, "transient", true, "", "transient: retry after a short delay" },
	{ SBX_S_EXEC_TIMEOUT, "execution", false, "",
	  "raise `timeout_ms` on the exec call or split the work into smaller steps" },
	{ SBX_S_FS, "filesystem", false, "", NULL },
	{ SBX_S_FS_NOT_FOUND, "filesystem", false, "file not found: ", NULL },
	{ SBX_S_FS_WRONG_TYPE, "filesystem", false, "not a directory or wrong type: ", NULL },
	{ SBX_S_FS_EXISTS, "filesystem", false, "already exists: ", NULL },
	{ SBX_S_FS_NOT_EMPTY, "filesystem", false, "directory not empty: ", NULL },
	{ SBX_S_FS_PERMISSION, "filesystem", false, "permission denied: ", NULL },
	{ SBX_S_FS_IO, "filesystem", false, "fs i/o error: ", NULL },
	{ SBX_S_FS_BAD_REGEX, "filesystem", false, "invalid regex pattern: ", NULL },
	{ SBX_S_FS_CHANNEL, "transient", true, "fs channel aborted: ", NULL },
	{ SBX_S_FS_UNSUPPORTED, "filesystem", false, "", NULL },
	{ SBX_S_VM_BOOT, "platform", false, "VM boot failed: ", NOTE_PLATFORM },
	{ SBX_S_LIMIT, "config", false, "resource limit exceeded: ", NOTE_PLATFORM },
	/* worker::* codes: S501 and S505 are the contract's (their type and
	 * retryable its inference, §3.3); S502-S504 and S506 are this
	 * project's numbering (gap G3; README, "Compose worker VMs"). */
	{ SBX_S_HOST_PATH, "validation", false, "",
	  "set `host_path` to a directory under the Compose project directory or the package cache" },
	{ SBX_S_NOT_PREPARED, "validation", false, "", "call worker::prepare for this worker first" },
	{ SBX_S_MANIFEST, "validation", false, "",
	  "fix the key the message names in iii.worker.yaml, then prepare again" },
	{ SBX_S_BUNDLES_DISABLED, "config", false, "",
	  "operator action required: bundle workers are disabled on this host (III_BUNDLE_WORKERS_DISABLED=1)" },
	{ SBX_S_AUTH, "validation", false, "",
	  "the `auth` field does not match the token the adapter was started with" },
	{ SBX_S_WORKER_BOOT, "platform", false, "worker VM failed to boot: ", NOTE_PLATFORM },
};

const struct sbx_scode *sbx_scode_find(const char *code)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (strcmp(table[i].code, code) == 0)
			return &table[i];
	}
	return NULL;
}

/* The guest's parent-missing text is the one S211 with a mechanical fix. */
static bool is_parent_missing(const char *detail)
{
	return strstr(detail, PROTO_TEXT_PARENT_MISSING) != NULL || strstr(detail, "parent directory not found") != NULL;
}

static json_t *nullable_string(const char *s)
{
	return s != NULL ? json_string(s) : json_null();
}

json_t *sbx_envelope_new(const char *code, const char *detail)
{
	const struct sbx_scode *sc = sbx_scode_find(code);
	if (sc == NULL)
		sc = sbx_scode_find(SBX_S_VM_BOOT);
	const char *prefix = sc->prefix;
	const char *note = sc->fix_note;
	json_t *fix = json_null();
	/* A paused sandbox is not gone: its message stands alone and the note
	 * says how to get it back. */
	if (strcmp(sc->code, SBX_S_STOPPED) == 0 && strstr(detail, SBX_PAUSED_MARK) != NULL) {
		prefix = "";
		note = NOTE_PAUSED;
	}
	if (strcmp(sc->code, SBX_S_FS_NOT_FOUND) == 0 && is_parent_missing(detail)) {
		prefix = "parent directory not found: ";
		note = NOTE_PARENTS;
		fix = json_pack("{s:b}", "parents", 1);
	}
	cleanup_free char *message = NULL;
	char docs_url[sizeof(SBX_DOCS_BASE) + 8];
	snprintf(docs_url, sizeof(docs_url), "%s#%s", SBX_DOCS_BASE, sc->code);
	if (fix == NULL)
		return NULL;
	if (asprintf(&message, "%s%s", prefix, detail) < 0) {
		json_decref(fix);
		return NULL;
	}
	return json_pack("{s:s, s:s, s:s, s:s, s:b, s:o, s:o}", "type", sc->type, "code", sc->code, "message",
			 message, "docs_url", docs_url, "retryable", sc->retryable, "fix", fix, "fix_note",
			 nullable_string(note));
}

int sbx_envelope_wrap_run(json_t *envelope, const char *step, const char *sandbox_id, sbx_error_t *err)
{
	const char *inner_code = json_string_value(json_object_get(envelope, "code"));
	const char *inner_msg = json_string_value(json_object_get(envelope, "message"));
	if (inner_code == NULL || inner_msg == NULL)
		return sbx_error_set(err, EINVAL, "run wrapping: envelope lacks code or message");
	cleanup_free char *message = NULL;
	cleanup_free char *context = NULL;
	/* Before the sandbox exists (step `create`) there is no id to name. */
	int rc = sandbox_id[0] != '\0'
			 ? asprintf(&message, "during sandbox::run step `%s` (sandbox_id=%s): %s", step, sandbox_id, inner_msg)
			 : asprintf(&message, "during sandbox::run step `%s`: %s", step, inner_msg);
	if (rc < 0)
		return sbx_error_errno(err, ENOMEM, "run wrapping");
	if (asprintf(&context, "during sandbox::run step `%s`", step) < 0)
		return sbx_error_errno(err, ENOMEM, "run wrapping");
	json_t *fix = json_pack("{s:s, s:s, s:s}", "context", context, "sandbox_id", sandbox_id, "inner_code",
				inner_code);
	if (fix == NULL)
		return sbx_error_errno(err, ENOMEM, "run wrapping");
	/* Each set takes its value, even when it fails. */
	if (json_object_set_new(envelope, "fix", fix) < 0)
		return sbx_error_errno(err, ENOMEM, "run wrapping");
	if (json_object_set_new(envelope, "fix_note", json_null()) < 0)
		return sbx_error_errno(err, ENOMEM, "run wrapping");
	if (json_object_set_new(envelope, "message", json_string(message)) < 0)
		return sbx_error_errno(err, ENOMEM, "run wrapping");
	return 0;
}

static json_t *invocation_failed(const char *head, const char *text)
{
	cleanup_free char *message = NULL;
	if (asprintf(&message, "%s%s", head, text) < 0)
		return NULL;
	return json_pack("{s:s, s:s}", "code", "invocation_failed", "message", message);
}

json_t *sbx_error_body_from_envelope(json_t *envelope)
{
	if (envelope == NULL)
		return NULL;
	cleanup_free char *compact = json_dumps(envelope, JSON_COMPACT);
	json_decref(envelope);
	if (compact == NULL)
		return NULL;
	return invocation_failed("handler error: ", compact);
}

json_t *sbx_error_body_decode(const char *text)
{
	return invocation_failed("serialization error: ", text);
}

json_t *sbx_error_body_from_error(sbx_error_t e, const char *run_step, const char *sandbox_id, json_t *extra)
{
	const char *code = e != NULL ? e->scode : "";
	const char *detail = sbx_error_msg(e);
	if (strcmp(code, SBX_SCODE_DECODE) == 0)
		return sbx_error_body_decode(detail);
	json_t *env = sbx_envelope_new(code[0] != '\0' ? code : SBX_S_VM_BOOT, detail);
	if (env != NULL && run_step != NULL) {
		sbx_error_t werr = NULL;
		if (sbx_envelope_wrap_run(env, run_step, sandbox_id, &werr) < 0) {
			sbx_error_free(&werr);
			json_decref(env);
			return NULL;
		}
	}
	if (env != NULL && extra != NULL && json_object_update_missing(env, extra) < 0) {
		json_decref(env);
		return NULL;
	}
	return sbx_error_body_from_envelope(env);
}

/* The body used when even the error body cannot be built. */
static json_t *oom_body(void)
{
	return json_pack("{s:s, s:s}", "code", "invocation_failed", "message", "out of memory");
}

/* The function sbx_adapter_call runs on this thread, named in the error of
 * a failure that gave no cause. */
static _Thread_local const char *current_op;

const char *sbx_op_set_current(const char *op)
{
	const char *outer = current_op;
	current_op = op;
	return outer;
}

/* Every failure says why.  One without an error, or with an empty message,
 * is a bug of the code that failed: it becomes an internal error naming the
 * function, logged loudly so that it is found, never an empty detail. */
static void ensure_cause(sbx_error_t *err)
{
	if (*err != NULL && sbx_error_msg(*err)[0] != '\0')
		return;
	const char *op = current_op != NULL ? current_op : "(outside a call)";
	char scode[sizeof((*err)->scode)] = "";
	int errnum = 0;
	if (*err != NULL) {
		memcpy(scode, (*err)->scode, sizeof(scode));
		errnum = (*err)->errnum;
	}
	sbx_err("BUG: %s::%s failed without a cause (error %s, S-code \"%s\", errno %d)", SBX_WORKER_NAME, op,
		*err != NULL ? "with an empty message" : "not set", scode, errnum);
	sbx_error_scode(err, scode[0] != '\0' ? scode : SBX_S_VM_BOOT,
			"internal error: %s::%s failed without giving a cause (a bug of sandbox-libkrun: its log "
			"says where)",
			SBX_WORKER_NAME, op);
}

int sbx_op_fail_extra(sbx_error_t *err, const char *step, const char *sandbox_id, json_t *extra, json_t **out)
{
	ensure_cause(err);
	*out = sbx_error_body_from_error(*err, step, sandbox_id, extra);
	sbx_error_free(err);
	if (*out == NULL)
		*out = oom_body();
	return -1;
}

int sbx_op_fail_run(sbx_error_t *err, const char *step, const char *sandbox_id, json_t **out)
{
	return sbx_op_fail_extra(err, step, sandbox_id, NULL, out);
}

int sbx_op_fail(sbx_error_t *err, json_t **out)
{
	return sbx_op_fail_run(err, NULL, "", out);
}
