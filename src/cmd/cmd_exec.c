/* `sandbox-libkrun exec ID -- CMD ARGS...`: the contract's exec through
 * the control socket; the command's output printed, its status ours. */
#include "cmd/cmd_exec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/control_client.h"
#include "common/cleanup.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: sandbox-libkrun exec [-i] [--timeout-ms N] [--socket PATH] ID -- CMD [ARGS...]\n\n"
		     "Runs a command in a sandbox (an id, a unique id prefix or a name) as the engine's\n"
		     "exec does, printing its stdout and stderr as they come.  Ending this command\n"
		     "(Ctrl-C, a kill) ends the command in the sandbox.\n\n"
		     "  -i, --interactive\n"
		     "                  pass our stdin to the command: read to its end first (at\n"
		     "                  most %u MiB), then the command starts with it; without -i\n"
		     "                  the command's stdin is empty\n"
		     "  --timeout-ms N  the command's deadline (default 300000, capped by the daemon's\n"
		     "                  max_exec_timeout_ms)\n"
		     "  --socket PATH   the daemon's control socket (default $SANDBOX_CONTROL_SOCKET,\n"
		     "                  else " CONTROL_SOCKET_DEFAULT ")\n\n"
		     "exit status: the command's; %d when its deadline passed; %d when it could not\n"
		     "run (no such sandbox, the daemon unreachable or refusing us); %d on bad usage.\n",
		CONTROL_STDIN_MAX >> 20, CLI_EXIT_TIMEOUT, CLI_EXIT_DAEMON, CLI_EXIT_USAGE);
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

/* All of stdin, at most CONTROL_STDIN_MAX bytes: 0, or the exit status
 * after saying why not. */
static int read_stdin(const struct cli_opts *o, uint8_t **data, size_t *len)
{
	*data = malloc(CONTROL_STDIN_MAX + 1u);
	*len = 0;
	if (*data == NULL)
		return cli_fail(o, "out of memory");
	for (;;) {
		ssize_t n = read(STDIN_FILENO, *data + *len, CONTROL_STDIN_MAX + 1u - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			cli_fail(o, "reading stdin: %s", strerror(errno));
			return CLI_EXIT_DAEMON;
		}
		if (n == 0)
			return 0;
		*len += (size_t)n;
		if (*len > CONTROL_STDIN_MAX) {
			cli_fail(o, "stdin holds more than %u MiB, what -i passes at most (copy large input in with "
				    "`sandbox-libkrun cp` and redirect from the file)",
				 CONTROL_STDIN_MAX >> 20);
			return CLI_EXIT_DAEMON;
		}
	}
}

/* stdin as frames after the request, then the end.  A send the daemon cut
 * short is not the story: its answer says why. */
static void send_stdin(struct cli_conn *c, const uint8_t *data, size_t len)
{
	sbx_error_t err = NULL;
	for (size_t off = 0; off < len && err == NULL;) {
		size_t n = len - off < CONTROL_FRAME_MAX ? len - off : CONTROL_FRAME_MAX;
		if (control_send_frame(c->fd, data + off, n, &err) == 0)
			off += n;
	}
	if (err == NULL)
		control_send_end(c->fd, &err);
	sbx_error_free(&err);
}

int sbx_cmd_exec(int argc, char **argv)
{
	struct cli_opts o;
	int rc = cli_begin(&argc, argv, false, usage, &o);
	if (rc >= 0)
		return rc;
	long long timeout = 0;
	bool with_stdin = false;
	int i = 1;
	for (; i < argc && argv[i][0] == '-' && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "-i") == 0 || strcmp(argv[i], "--interactive") == 0) {
			with_stdin = true;
		} else if (strcmp(argv[i], "--timeout-ms") == 0 && i + 1 < argc) {
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
	cleanup_free uint8_t *in = NULL;
	size_t in_len = 0;
	if (with_stdin) {
		if (req != NULL)
			json_object_set_new(req, "stdin", json_true());
		if ((rc = read_stdin(&o, &in, &in_len)) != 0) {
			json_decref(req);
			return rc;
		}
	}
	struct cli_conn c;
	if ((rc = cli_open(&o, req, &c)) != 0)
		return rc;
	if (with_stdin)
		send_stdin(&c, in, in_len);
	json_t *res;
	rc = cli_answer(&c, put, NULL, &res);
	cli_close(&c);
	if (rc != 0)
		return rc == CLI_EXIT_FAILED ? CLI_EXIT_DAEMON : rc;
	rc = print_result(res);
	json_decref(res);
	return rc;
}
