/* run (contract §7.7): create, write the files and the code, exec the
 * interpreter, stop unless kept.  A failing step is wrapped per §2.4. */
#include <errno.h>
#include <string.h>

#include "adapter/handlers.h"
#include "adapter/request.h"
#include "adapter/sandbox/env.h"
#include "adapter/sandbox/exec_stream.h"
#include "adapter/sandbox/lang.h"
#include "adapter/sandbox/sandbox.h"
#include "adapter/sandbox/sandbox_network.h"
#include "common/scodes.h"
#include "common/cleanup_json.h"
#include "common/log.h"

struct run_args {
	struct sandbox_create_args create;
	const char *code, *lang, *stdin_b64;
	json_t *files; /* NULL or an array of {path, content} */
	json_t *stream; /* NULL or the exec's {stdout?, stderr?} writer refs */
	uint64_t timeout_ms;
	bool keep;
};

static int decode_files(json_t *req, json_t **files, sbx_error_t *err)
{
	*files = json_object_get(req, "files");
	if (*files == NULL || json_is_null(*files)) {
		*files = NULL;
		return 0;
	}
	if (!json_is_array(*files))
		return req_type_error(*files, "files", "a sequence of {path, content}", err);
	size_t i;
	json_t *f;
	json_array_foreach(*files, i, f) {
		const char *s;
		size_t len;
		if (!json_is_object(f))
			return req_type_error(f, "files", "a {path, content} map", err);
		/* The content is written by length: NUL bytes are data. */
		if (req_string(f, "path", true, &s, err) < 0)
			return -1;
		if (req_bytes(f, "content", true, &s, &len, err) < 0)
			return -1;
	}
	return 0;
}

static int decode_run(json_t *req, struct run_args *r, sbx_error_t *err)
{
	if (req_object(req, err) < 0)
		return -1;
	if (req_string(req, "image", true, &r->create.image, err) < 0)
		return -1;
	if (req_string(req, "code", true, &r->code, err) < 0)
		return -1;
	if (req_string(req, "lang", true, &r->lang, err) < 0)
		return -1;
	if (decode_files(req, &r->files, err) < 0)
		return -1;
	if (env_decode(req, "env", &r->create.env, err) < 0)
		return -1;
	if (sandbox_network_decode(req, &r->create, err) < 0)
		return -1;
	json_t *ports = json_object_get(req, "ports");
	if (ports != NULL && !json_is_null(ports))
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "`ports` is create's: run's sandbox ends with its "
				       "code, before anyone could connect (create with ports, then exec)");
	if (req_string(req, "stdin", false, &r->stdin_b64, err) < 0)
		return -1;
	if (req_u64(req, "timeout_ms", 300000, &r->timeout_ms, err) < 0)
		return -1;
	if (req_bool(req, "keep_sandbox", false, &r->keep, err) < 0)
		return -1;
	return exec_stream_decode(req, &r->stream, err);
}

/* Steps 2-4 on the created sandbox; on failure *step names the step, and
 * *printed holds a timed-out exec's output (sandbox_exec). */
static json_t *run_steps(struct sbx_adapter *a, const char *id, const struct run_args *r, const char **step,
			 json_t **printed, sbx_error_t *err)
{
	size_t i;
	json_t *f;
	*step = "fs::write (sibling file)";
	json_array_foreach(r->files, i, f) {
		json_t *content = json_object_get(f, "content");
		if (sandbox_write_file(a, id, json_string_value(json_object_get(f, "path")), 0644,
				       json_string_value(content), json_string_length(content), err) < 0)
			return NULL;
	}
	struct run_lang l = run_lang_lookup(r->lang);
	*step = "fs::write (code)";
	if (sandbox_write_file(a, id, l.file, 0644, r->code, strlen(r->code), err) < 0)
		return NULL;
	*step = "exec";
	json_t *env = env_resolve(r->create.env, err);
	json_t *argv = json_pack("[s, s]", "", l.file);
	json_t *reply = NULL;
	if (env != NULL && argv != NULL && json_array_set_new(argv, 0, json_string(l.program)) == 0) {
		struct sandbox_exec_args x = {
			.argv = argv, .env = env, .stdin_b64 = r->stdin_b64, .timeout_ms = r->timeout_ms, .stream = r->stream,
		};
		reply = sandbox_exec(a, id, &x, printed, err);
	} else if (env != NULL) {
		sbx_error_errno(err, ENOMEM, "run");
	}
	json_decref(env);
	json_decref(argv);
	return reply;
}

int sbx_op_run(struct sbx_adapter *a, json_t *req, json_t **out)
{
	sbx_error_t err = NULL;
	struct run_args r = { 0 };
	char id[SBX_UUID_STRLEN + 1];
	if (decode_run(req, &r, &err) < 0)
		return sbx_op_fail(&err, out);
	/* run creates with the configured defaults: no cpus/memory overrides. */
	if (sandbox_create(a, &r.create, id, &err) < 0)
		return sbx_op_fail_run(&err, "create", "", out);
	const char *step = "";
	cleanup_json json_t *printed = NULL;
	json_t *reply = run_steps(a, id, &r, &step, &printed, &err);
	if (!r.keep) {
		sbx_error_t serr = NULL;
		/* The reply does not wait for QEMU to exit (contract §7.7 step 5
		 * is best effort): the sandbox is gone from the registry now. */
		if (sandbox_stop_soon(a, id, &serr) < 0)
			sbx_warn("run: cleanup of sandbox %s: %s", id, sbx_error_msg(serr));
		sbx_error_free(&serr);
	}
	if (reply == NULL)
		return sbx_op_fail_extra(&err, step, id, printed, out);
	if (r.keep && json_object_set_new(reply, "sandbox_id", json_string(id)) < 0) {
		json_decref(reply);
		sbx_error_errno(&err, ENOMEM, "run reply");
		return sbx_op_fail_run(&err, "exec", id, out);
	}
	*out = reply;
	return 0;
}
