#include "adapter/sandbox/exec_shape.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "adapter/quote.h"
#include "adapter/sandbox/shlex.h"
#include "common/cleanup.h"
#include "common/cleanup_json.h"
#include "common/scodes.h"

#define EMPTY_MSG "cmd is required and must be non-empty (or pass `argv` with at least one element)"

static bool has_whitespace(const char *s)
{
	for (; *s != '\0'; s++) {
		if (isspace((unsigned char)*s))
			return true;
	}
	return false;
}

static json_t *from_cmd_args(const char *cmd, json_t *args, sbx_error_t *err)
{
	cleanup_json json_t *out = json_array();
	if (out == NULL)
		return sbx_error_errno(err, ENOMEM, "exec command"), NULL;
	if (json_array_append_new(out, json_string(cmd)) < 0)
		return sbx_error_errno(err, ENOMEM, "exec command"), NULL;
	if (args != NULL && json_array_extend(out, args) < 0)
		return sbx_error_errno(err, ENOMEM, "exec command"), NULL;
	return sbx_steal_ptr(out);
}

static json_t *check_program(json_t *argv, sbx_error_t *err)
{
	const char *prog = json_string_value(json_array_get(argv, 0));
	if (prog == NULL || prog[0] == '\0') {
		json_decref(argv);
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST, EMPTY_MSG), NULL;
	}
	return argv;
}

json_t *exec_shape_resolve(const char *cmd, json_t *args, json_t *argv, sbx_error_t *err)
{
	if (cmd == NULL)
		cmd = "";
	size_t nargs = args != NULL ? json_array_size(args) : 0;
	if (argv != NULL && json_array_size(argv) > 0) {
		if (cmd[0] != '\0' || nargs > 0) {
			cleanup_free char *qv = sbx_quote_list(argv);
			cleanup_free char *qc = sbx_quote(cmd);
			cleanup_free char *qa = args != NULL ? sbx_quote_list(args) : NULL;
			return sbx_error_scode(err, SBX_S_INVALID_REQUEST,
					       "`argv` cannot be combined with `cmd` or `args`. Pick one shape. Got "
					       "argv=%s, cmd=%s, args=%s",
					       qv ? qv : "[...]", qc ? qc : "\"...\"", qa ? qa : "[]"), NULL;
		}
		json_t *out = json_deep_copy(argv);
		if (out == NULL)
			return sbx_error_errno(err, ENOMEM, "exec command"), NULL;
		return check_program(out, err);
	}
	if (has_whitespace(cmd)) {
		cleanup_free char *qc = sbx_quote(cmd);
		if (nargs > 0) {
			cleanup_free char *qa = sbx_quote_list(args);
			return sbx_error_scode(err, SBX_S_INVALID_REQUEST,
					       "cmd contains whitespace (shell-line shape) AND `args` is set; that is "
					       "ambiguous. Either remove whitespace from cmd and pass arguments via `args`, "
					       "or leave `args` empty so cmd is shlex-split. Got cmd=%s, args=%s",
					       qc ? qc : "\"...\"", qa ? qa : "[...]"), NULL;
		}
		sbx_error_t serr = NULL;
		json_t *words = sbx_shlex_split(cmd, &serr);
		if (words == NULL) {
			int errnum = serr->errnum;
			sbx_error_free(&serr);
			if (errnum == ENOMEM)
				return sbx_error_errno(err, ENOMEM, "exec command"), NULL;
			return sbx_error_scode(err, SBX_S_INVALID_REQUEST,
					       "cmd has unbalanced quotes and cannot be shlex-split: %s. Use `argv: "
					       "[...]` for argv arrays with embedded quotes.",
					       qc ? qc : "\"...\""), NULL;
		}
		if (json_array_size(words) == 0) {
			json_decref(words);
			return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "cmd is empty after shlex split: %s", qc ? qc : "\"\""),
			       NULL;
		}
		return check_program(words, err);
	}
	json_t *out = from_cmd_args(cmd, args, err);
	return out != NULL ? check_program(out, err) : NULL;
}
