/* The front door: the 23 functions (id, one-line description, the request
 * and response JSON Schemas the engine publishes: contract §1.5, fields
 * from §7), their lookup, and the one call that runs a function. */
#include "adapter/adapter.h"

#include <errno.h>
#include <string.h>

#include "adapter/call_log.h"
#include "adapter/call_metrics.h"
#include "adapter/handlers.h"
#include "adapter/op_schema.h"
#include "adapter/scode.h"

/* exec's and run's optional `stream`: writer refs of the caller's channels. */
#define T_EXEC_STREAM OBJ(F("stdout", T_CHANNEL) "," F("stderr", T_CHANNEL), "")

/* adapter::info's `capacity` (handlers_info.c), for placement. */
#define T_CAPACITY                                                                                              \
	OBJ(F("sandboxes", OBJ(F("live", T_U32) "," F("max", T_U32), Q("live") "," Q("max"))) ","                 \
	    F("memory_mib", OBJ(F("committed", T_U64) "," F("budget", T_U64) "," F("sandbox_default", T_U64),       \
				Q("committed") "," Q("budget") "," Q("sandbox_default"))) ","                         \
	    F("images_cached", T_STRS) "," F("pool_ready", T_U32) "," F("standby_ready", T_BOOL) "," F("kvm", T_BOOL), \
	    Q("sandboxes") "," Q("memory_mib") "," Q("images_cached") "," Q("pool_ready") "," Q("standby_ready") "," \
		Q("kvm"))

static const struct sbx_op ops[] = {
	{ "adapter::info", "Name and version of this sandbox adapter, the sandbox contract it implements and its capacity",
	  EMPTY,
	  OBJ(F("adapter", T_STR) "," F("adapter_version", T_STR) "," F("contract", OBJ(F("major", T_U32) "," F("minor", T_U32), Q("major") "," Q("minor"))) "," F("extensions", T_STRS) "," F("capacity", T_CAPACITY),
	      Q("adapter") "," Q("adapter_version") "," Q("contract")),
	  sbx_op_adapter_info },
	{ "catalog::list", "List bootable images: the presets, then the operator's custom_images", EMPTY,
	  OBJ(F("images", "{\"type\":\"array\",\"items\":" OBJ(F("name", T_STR) "," F("oci_ref", T_STR) "," F("kind", "{\"type\":\"string\",\"enum\":[\"preset\",\"custom\"]}"),
							     Q("name") "," Q("oci_ref") "," Q("kind")) "}"),
	      Q("images")),
	  sbx_op_catalog_list },
	{ "create", "Boot a sandbox microVM from a catalog image",
	  OBJ(F("image", T_STR) "," F("cpus", T_U32) "," F("memory_mb", T_U32) "," F("name", T_STR) "," F("network", T_NETWORK) "," F("idle_timeout_secs", T_U64) "," F("env", T_ENV) "," F("keep_alive_while_running", T_BOOL),
	      Q("image")),
	  OBJ(ID "," F("image", T_STR), Q("sandbox_id") "," Q("image")), sbx_op_create },
	{ "exec", "Run a command in a sandbox and return its output",
	  OBJ(ID "," F("cmd", T_STR) "," F("args", T_STRS) "," F("argv", T_STRS) "," F("stdin", T_STR) "," F("env", T_ENV) "," F("timeout_ms", T_U64) "," F("workdir", T_STR) "," F("background", T_BOOL) "," F("stream", T_EXEC_STREAM),
	      Q("sandbox_id")),
	  "{\"oneOf\":[" OBJ(EXEC_RESULT_PROPS, EXEC_RESULT_REQ) "," OBJ(F("process_id", T_STR) "," F("pid", T_U32), Q("process_id") "," Q("pid")) "]}",
	  sbx_op_exec },
	{ "stop", "Stop a sandbox and discard its writes", OBJ(ID "," F("wait", T_BOOL), Q("sandbox_id")),
	  OBJ(ID "," F("stopped", T_BOOL), Q("sandbox_id") "," Q("stopped")), sbx_op_stop },
	{ "list", "List live sandboxes", EMPTY,
	  OBJ(F("sandboxes", "{\"type\":\"array\",\"items\":" OBJ(ID "," F("name", "{\"type\":[\"string\",\"null\"]}") "," F("image", T_STR) "," F("age_secs", T_U64) "," F("exec_in_progress", T_BOOL) "," F("exec_in_flight", T_U32) "," F("exec_slots_free", T_U32) "," F("stopped", T_BOOL),
								  Q("sandbox_id") "," Q("name") "," Q("image") "," Q("age_secs") "," Q("exec_in_progress") "," Q("exec_in_flight") "," Q("exec_slots_free") "," Q("stopped")) "}"),
	      Q("sandboxes")),
	  sbx_op_list },
	{ "run", "Run code in a fresh sandbox in one call (create, write, exec, stop)",
	  OBJ(F("image", T_STR) "," F("code", T_STR) "," F("lang", T_STR) "," F("files", "{\"type\":\"array\",\"items\":" OBJ(F("path", T_STR) "," F("content", T_STR), Q("path") "," Q("content")) "}") "," F("env", T_ENV) "," F("stdin", T_STR) "," F("timeout_ms", T_U64) "," F("keep_sandbox", T_BOOL) "," F("stream", T_EXEC_STREAM),
	      Q("image") "," Q("code") "," Q("lang")),
	  OBJ(EXEC_RESULT_PROPS "," ID, EXEC_RESULT_REQ), sbx_op_run },
	{ "fs::ls", "List a directory in a sandbox", OBJ(ID "," F("path", T_STR), Q("sandbox_id") "," Q("path")),
	  OBJ(F("entries", "{\"type\":\"array\",\"items\":" T_ENTRY "}"), Q("entries")), sbx_op_fs_ls },
	{ "fs::stat", "Describe one path in a sandbox (lstat)", OBJ(ID "," F("path", T_STR), Q("sandbox_id") "," Q("path")),
	  T_ENTRY, sbx_op_fs_stat },
	{ "fs::mkdir", "Create a directory in a sandbox",
	  OBJ(ID "," F("path", T_STR) "," F("mode", T_STR) "," F("parents", T_BOOL), Q("sandbox_id") "," Q("path")),
	  OBJ(F("created", T_BOOL), Q("created")), sbx_op_fs_mkdir },
	{ "fs::rm", "Remove a file or directory in a sandbox",
	  OBJ(ID "," F("path", T_STR) "," F("recursive", T_BOOL), Q("sandbox_id") "," Q("path")),
	  OBJ(F("removed", T_BOOL), Q("removed")), sbx_op_fs_rm },
	{ "fs::chmod", "Change the mode (and optionally owner) of a path in a sandbox",
	  OBJ(ID "," F("path", T_STR) "," F("mode", T_STR) "," F("uid", T_U32) "," F("gid", T_U32) "," F("recursive", T_BOOL),
	      Q("sandbox_id") "," Q("path") "," Q("mode")),
	  OBJ(F("updated", T_U64), Q("updated")), sbx_op_fs_chmod },
	{ "fs::mv", "Move or rename a path in a sandbox",
	  OBJ(ID "," F("src", T_STR) "," F("dst", T_STR) "," F("overwrite", T_BOOL), Q("sandbox_id") "," Q("src") "," Q("dst")),
	  OBJ(F("moved", T_BOOL), Q("moved")), sbx_op_fs_mv },
	{ "fs::grep", "Search files in a sandbox with a regular expression",
	  OBJ(ID "," F("path", T_STR) "," F("pattern", T_STR) "," WALK "," F("max_matches", T_U64) "," F("max_line_bytes", T_U64),
	      Q("sandbox_id") "," Q("path") "," Q("pattern")),
	  OBJ(F("matches", "{\"type\":\"array\",\"items\":" OBJ(F("path", T_STR) "," F("line", T_U64) "," F("content", T_STR), Q("path") "," Q("line") "," Q("content")) "}") "," F("truncated", T_BOOL),
	      Q("matches") "," Q("truncated")),
	  sbx_op_fs_grep },
	{ "fs::sed", "Replace text line by line in files of a sandbox",
	  OBJ(ID "," F("files", T_STRS) "," F("path", T_STR) "," WALK "," F("pattern", T_STR) "," F("replacement", T_STR) "," F("regex", T_BOOL) "," F("first_only", T_BOOL),
	      Q("sandbox_id") "," Q("pattern") "," Q("replacement")),
	  OBJ(F("results", "{\"type\":\"array\",\"items\":" OBJ(F("path", T_STR) "," F("replacements", T_U64) "," F("success", T_BOOL) "," F("error", T_STR), Q("path") "," Q("replacements") "," Q("success")) "}") "," F("total_replacements", T_U64),
	      Q("results") "," Q("total_replacements")),
	  sbx_op_fs_sed },
	{ "fs::write", "Write a file in a sandbox from a string, base64 or a channel",
	  OBJ(ID "," F("path", T_STR) "," F("mode", T_STR) "," F("parents", T_BOOL) "," F("content", "{\"oneOf\":[" T_STR "," T_CHANNEL "]}") "," F("content_b64", T_STR),
	      Q("sandbox_id") "," Q("path")),
	  OBJ(F("bytes_written", T_U64) "," F("path", T_STR), Q("bytes_written") "," Q("path")), sbx_op_fs_write },
	{ "fs::read", "Read a file from a sandbox through a channel (and inline when small UTF-8)",
	  OBJ(ID "," F("path", T_STR), Q("sandbox_id") "," Q("path")),
	  OBJ(F("content", T_CHANNEL) "," F("body", T_STR) "," F("size", T_U64) "," F("mode", T_STR) "," F("mtime", T_I64),
	      Q("content") "," Q("size") "," Q("mode") "," Q("mtime")),
	  sbx_op_fs_read },
	{ "worker::prepare", "Prepare a Compose worker VM: read its iii.worker.yaml, pull its base image, create its data disk",
	  OBJ(AUTH "," F("host_path", T_STR) "," F("base_image", T_STR) "," F("exec", T_STRS) "," F("resources", OBJ(F("cpus", T_U32) "," F("memory", "{\"type\":[\"integer\",\"string\"]}"), "")),
	      Q("auth") "," Q("worker") "," Q("host_path")),
	  OBJ(F("worker", T_STR) "," F("prepared", T_BOOL) "," F("source", "{\"type\":\"string\",\"enum\":[\"path\",\"package\"]}") "," F("base_image", T_STR) "," F("cpus", T_U32) "," F("memory_mb", T_U32),
	      Q("worker") "," Q("prepared") "," Q("source") "," Q("base_image") "," Q("cpus") "," Q("memory_mb")),
	  sbx_op_worker_prepare },
	{ "worker::start", "Boot a prepared Compose worker VM",
	  OBJ(AUTH "," F("env", T_ENV) "," F("engine_url", T_STR) "," F("config_dir", T_STR), Q("auth") "," Q("worker")),
	  OBJ(F("worker", T_STR) "," F("pid", T_U32) "," F("state", T_STR), Q("worker") "," Q("state")), sbx_op_worker_start },
	{ "worker::status", "State of a Compose worker VM", OBJ(AUTH, Q("auth") "," Q("worker")),
	  OBJ(F("worker", T_STR) "," F("state", T_STR) "," F("pid", T_U32) "," F("exit_code", T_I64) "," F("started_at", T_STR),
	      Q("worker") "," Q("state")),
	  sbx_op_worker_status },
	{ "worker::logs", "Console output of a Compose worker VM",
	  OBJ(AUTH "," F("tail", T_U64), Q("auth") "," Q("worker")),
	  OBJ(F("worker", T_STR) "," F("stdout", T_STR) "," F("stderr", T_STR), Q("worker") "," Q("stdout") "," Q("stderr")),
	  sbx_op_worker_logs },
	{ "worker::stop", "Stop a Compose worker VM, keeping its state",
	  OBJ(AUTH "," F("timeout_secs", T_U64), Q("auth") "," Q("worker")),
	  OBJ(F("worker", T_STR) "," F("stopped", T_BOOL), Q("worker") "," Q("stopped")), sbx_op_worker_stop },
	{ "worker::destroy", "Stop a Compose worker VM and delete its state", OBJ(AUTH, Q("auth") "," Q("worker")),
	  OBJ(F("worker", T_STR) "," F("destroyed", T_BOOL), Q("worker") "," Q("destroyed")), sbx_op_worker_destroy },
};

const struct sbx_op *sbx_ops(size_t *n)
{
	*n = sizeof(ops) / sizeof(ops[0]);
	return ops;
}

const struct sbx_op *sbx_op_find(const char *op)
{
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (strcmp(ops[i].op, op) == 0)
			return &ops[i];
	}
	size_t n;
	const struct sbx_op *ext = sbx_op_extensions(&n);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(ext[i].op, op) == 0)
			return &ext[i];
	}
	return NULL;
}

static int run_op(struct sbx_adapter *a, const char *op, json_t *req, const struct sbx_exec_live *live, json_t **out)
{
	*out = NULL;
	struct sbx_call_log log;
	sbx_call_log_start(&log, op, req);
	const struct sbx_op *o = sbx_op_find(op);
	if (o == NULL) {
		*out = json_pack("{s:s, s:s}", "code", "function_not_found", "message", "unknown sandbox-libkrun function");
		sbx_call_log_end(&log, -1, *out);
		return -1;
	}
	const char *outer = sbx_op_set_current(o->op);
	int64_t start_ns = sbx_call_metrics_start();
	int rc = live != NULL ? sbx_op_exec_live(a, req, live, out) : o->fn(a, req, out);
	if (rc == 0 && *out == NULL) {
		sbx_error_t err = NULL;
		sbx_error_set(&err, ENOMEM, "out of memory building the reply");
		rc = sbx_op_fail(&err, out);
	} else if (rc < 0 && *out == NULL) {
		sbx_error_t err = NULL;
		rc = sbx_op_fail(&err, out);
	}
	sbx_op_set_current(outer);
	sbx_call_log_end(&log, rc, *out);
	sbx_call_metrics_record(o->op, rc, *out, start_ns);
	return rc;
}

int sbx_adapter_call(struct sbx_adapter *a, const char *op, json_t *req, json_t **out)
{
	return run_op(a, op, req, NULL, out);
}

int sbx_adapter_exec_live(struct sbx_adapter *a, json_t *req, const struct sbx_exec_live *live, json_t **out)
{
	return run_op(a, "exec", req, live, out);
}
