/* The extensions: functions beyond the contract's 23 that an issue named
 * (process::* for background processes, terminal::* for interactive
 * terminals, pause and resume, snapshots), registered beside them and listed by adapter::info under
 * `extensions`.  A caller that uses none of them sees the 23 unchanged. */
#include "adapter/adapter.h"

#include "adapter/handlers.h"
#include "adapter/op_schema.h"

#define PROC F("process_id", T_STR)
#define TERM F("terminal_id", T_STR)
#define T_STATE "{\"type\":\"string\",\"enum\":[\"running\",\"exited\"]}"
#define T_DIM "{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000}"

static const struct sbx_op extensions[] = {
	{ "process::list", "List a sandbox's background processes",
	  OBJ(ID, Q("sandbox_id")),
	  OBJ(F("processes", "{\"type\":\"array\",\"items\":" OBJ(PROC "," F("argv", T_STRS) "," F("pid", T_U32) "," F("state", T_STATE) "," F("exit_code", T_I64) "," F("started_at", T_STR) "," F("ended_at", T_STR) "," F("bytes", OBJ(F("stdout", T_U64) "," F("stderr", T_U64), Q("stdout") "," Q("stderr"))),
							       Q("process_id") "," Q("argv") "," Q("pid") "," Q("state") "," Q("started_at") "," Q("bytes")) "}"),
	      Q("processes")),
	  sbx_op_process_list },
	{ "process::logs", "Read a background process's output from a byte offset, or follow it through a channel",
	  OBJ(ID "," PROC "," F("stream", "{\"type\":\"string\",\"enum\":[\"stdout\",\"stderr\"]}") "," F("offset", T_U64) "," F("follow", T_CHANNEL),
	      Q("sandbox_id") "," Q("process_id")),
	  OBJ(F("data", T_STR) "," F("next_offset", T_U64) "," F("dropped", T_BOOL) "," F("state", T_STATE),
	      Q("data") "," Q("next_offset") "," Q("dropped") "," Q("state")),
	  sbx_op_process_logs },
	{ "process::wait", "Wait for a background process to exit",
	  OBJ(ID "," PROC "," F("timeout_ms", T_U64), Q("sandbox_id") "," Q("process_id")),
	  OBJ(F("state", T_STATE) "," F("exit_code", T_I64), Q("state")),
	  sbx_op_process_wait },
	{ "process::signal", "Send a signal to a background process's group",
	  OBJ(ID "," PROC "," F("signal", "{\"type\":\"string\",\"enum\":[\"TERM\",\"KILL\",\"INT\",\"HUP\"]}"),
	      Q("sandbox_id") "," Q("process_id") "," Q("signal")),
	  OBJ(F("sent", T_BOOL), Q("sent")),
	  sbx_op_process_signal },
	{ "terminal::open", "Start a command on a pseudo-terminal in a sandbox: keys in through one channel, the screen out through another",
	  OBJ(ID "," F("argv", T_STRS) "," F("rows", T_DIM) "," F("cols", T_DIM) "," F("env", T_ENV),
	      Q("sandbox_id") "," Q("rows") "," Q("cols")),
	  OBJ(F("terminal_id", T_STR) "," F("input", T_CHANNEL) "," F("output", T_CHANNEL),
	      Q("terminal_id") "," Q("input") "," Q("output")),
	  sbx_op_terminal_open },
	{ "terminal::resize", "Change a terminal's size",
	  OBJ(ID "," TERM "," F("rows", T_DIM) "," F("cols", T_DIM), Q("sandbox_id") "," Q("terminal_id") "," Q("rows") "," Q("cols")),
	  OBJ(F("resized", T_BOOL), Q("resized")),
	  sbx_op_terminal_resize },
	{ "terminal::close", "End a terminal: its command gets SIGHUP, its channels close",
	  OBJ(ID "," TERM, Q("sandbox_id") "," Q("terminal_id")),
	  OBJ(F("closed", T_BOOL), Q("closed")),
	  sbx_op_terminal_close },
	{ "pause", "Pause a sandbox: its memory and disk go to the host's disk and its VM stops until a resume (or the next call that needs it)",
	  OBJ(ID, Q("sandbox_id")),
	  OBJ(F("paused", T_BOOL) "," F("size_bytes", T_U64) "," F("duration_ms", T_U64),
	      Q("paused") "," Q("size_bytes") "," Q("duration_ms")),
	  sbx_op_pause },
	{ "resume", "Resume a paused sandbox: its processes go on, its files are as they were",
	  OBJ(ID, Q("sandbox_id")),
	  OBJ(F("resumed", T_BOOL) "," F("ready_ms", T_U64), Q("resumed") "," Q("ready_ms")),
	  sbx_op_resume },
	{ "snapshot", "Capture a running sandbox (memory, devices, disk) as a snapshot that create can start sandboxes from; the sandbox runs on",
	  OBJ(ID "," F("name", T_STR), Q("sandbox_id")),
	  OBJ(F("snapshot_id", T_STR) "," ID "," F("image", T_STR) "," F("cpus", T_U32) "," F("memory_mb", T_U32) "," F("network", T_BOOL) "," F("size_bytes", T_U64) "," F("paused_ms", T_U64) "," F("duration_ms", T_U64),
	      Q("snapshot_id") "," Q("sandbox_id") "," Q("image") "," Q("cpus") "," Q("memory_mb") "," Q("network") "," Q("size_bytes") "," Q("paused_ms") "," Q("duration_ms")),
	  sbx_op_snapshot },
	{ "fork", "Create up to 32 sandboxes from a running sandbox at one point of its run (a snapshot taken for them); the sandbox runs on",
	  OBJ(ID "," F("count", "{\"type\":\"integer\",\"minimum\":1,\"maximum\":32}") "," F("name", T_STR), Q("sandbox_id")),
	  OBJ(F("sandbox_ids", T_STRS) "," F("snapshot_ms", T_U64) "," F("ready_ms", T_U64), Q("sandbox_ids") "," Q("snapshot_ms") "," Q("ready_ms")),
	  sbx_op_fork },
	{ "snapshot::list", "List the snapshots kept",
	  EMPTY,
	  OBJ(F("snapshots", "{\"type\":\"array\",\"items\":" OBJ(F("snapshot_id", T_STR) "," ID "," F("name", "{\"type\":[\"string\",\"null\"]}") "," F("image", T_STR) "," F("cpus", T_U32) "," F("memory_mb", T_U32) "," F("network", T_BOOL) "," F("size_bytes", T_U64) "," F("created_at", T_STR) "," F("sandboxes_using", T_U32) "," F("restorable", T_BOOL) "," F("restore_error", T_STR),
								     Q("snapshot_id") "," Q("image") "," Q("cpus") "," Q("memory_mb") "," Q("network") "," Q("size_bytes") "," Q("created_at") "," Q("sandboxes_using") "," Q("restorable")) "}"),
	      Q("snapshots")),
	  sbx_op_snapshot_list },
	{ "snapshot::delete", "Delete a snapshot; sandboxes created from it run on",
	  OBJ(F("snapshot_id", T_STR), Q("snapshot_id")),
	  OBJ(F("deleted", T_BOOL), Q("deleted")),
	  sbx_op_snapshot_delete },
};

const struct sbx_op *sbx_op_extensions(size_t *n)
{
	*n = sizeof(extensions) / sizeof(extensions[0]);
	return extensions;
}
