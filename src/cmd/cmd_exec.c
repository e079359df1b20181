/* `sandbox-libkrun exec ID -- CMD ARGS...`: the contract's exec through
 * the control socket; the command's output printed, its status ours. */
#include "cmd/cmd_exec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/control_client.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: sandbox-libkrun exec [--timeout-ms N] [--socket PATH] ID -- CMD [ARGS...]\n\n"
		     "Runs a command in a sandbox (an id, a unique id prefix or a name) as the engine's\n"
		     "exec does, printing its stdout and stderr as they come.\n\n"
		     "  --timeout-ms N  the command's deadline (default 300000, capped by the daemon's\n"
		     "                  max_exec_timeout_ms)\n"
		     "  --socket PATH   the daemon's control socket (default $SANDBOX_CONTROL_SOCKET,\n"
		     "                  else " CONTROL_SOCKET_DEFAULT ")\n\n"
		     "exit status: the command's; %d when its deadline passed; %d when it could not\n"
		     "run (no such sandbox, the daemon unreachable or refusing us); %d on bad usage.\n",
		CLI_EXIT_TIMEOUT, CLI_EXIT_DAEMON, CLI_EXIT_USAGE);
}

/* The command's output, as it comes: unbuffered, in arrival order. */
static int put(void *ud, int stream, const void *data, size_t len)
{
	FILE *f = stream == 2 ? stderr : stdout;
	if (fwrite(data, 1, len, f) != len || fflush(f) != 0)
		return -1;
	return 0;
}

static int print_result(json_t *res)
{
	if (json_is_true(json_object_get(res, "timed_out"))) {
		fprintf(stderr, "sandbox-libkrun exec: the command's deadline passed\n");
		return CLI_EXIT_TIMEOUT;
	}
	json_t *code = json_object_get(res, "exit_code");
	return json_is_integer(code) ? (int)(json_integer_value(code) & 0xff) : CLI_EXIT_DAEMON;
}

static int parse_timeout(const struct cli_opts *o, const char *s, long long *out)
{
	char *end;
	errno = 0;
	*out = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || *out < 0)
		return cli_usage_error(o, "--timeout-ms takes milliseconds, not '%s'", s);
	return 0;
}

int sbx_cmd_exec(int argc, char **argv)
{
	struct cli_opts o;
	int rc = cli_begin(&argc, argv, false, usage, &o);
	if (rc >= 0)
		return rc;
	long long timeout = 0;
	int i = 1;
	for (; i < argc && argv[i][0] == '-' && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--timeout-ms") == 0 && i + 1 < argc) {
			if (parse_timeout(&o, argv[++i], &timeout) != 0)
				return CLI_EXIT_USAGE;
		} else if (strncmp(argv[i], "--timeout-ms=", 13) == 0) {
			if (parse_timeout(&o, argv[i] + 13, &timeout) != 0)
				return CLI_EXIT_USAGE;
		} else {
			return cli_usage_error(&o, "unknown option '%s'", argv[i]);
		}
	}
	if (i >= argc || strcmp(argv[i], "--") == 0)
		return cli_usage_error(&o, "missing the sandbox id");
	const char *id = argv[i++];
	if (i < argc && strcmp(argv[i], "--") == 0)
		i++;
	if (i >= argc)
		return cli_usage_error(&o, "missing the command after the sandbox id");
	if ((unsigned)(argc - i) > CONTROL_ARGV_MAX)
		return cli_usage_error(&o, "more than %u arguments", CONTROL_ARGV_MAX);
	json_t *args = json_array();
	for (; args != NULL && i < argc; i++) {
		if (json_array_append_new(args, json_string(argv[i])) < 0) {
			json_decref(args);
			args = NULL;
		}
	}
	json_t *req = args != NULL ? json_pack("{s:s, s:s, s:o}", "op", "exec", "sandbox", id, "argv", args) : NULL;
	if (req != NULL && timeout > 0)
		json_object_set_new(req, "timeout_ms", json_integer(timeout));
	struct cli_conn c;
	if ((rc = cli_open(&o, req, &c)) != 0)
		return rc;
	json_t *res;
	rc = cli_answer(&c, put, NULL, &res);
	cli_close(&c);
	if (rc != 0)
		return rc == CLI_EXIT_FAILED ? CLI_EXIT_DAEMON : rc;
	rc = print_result(res);
	json_decref(res);
	return rc;
}
