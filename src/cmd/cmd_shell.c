/* `sandbox-libkrun shell ID [-- CMD ARGS...]`: an interactive terminal in
 * a sandbox through the control socket: the local terminal in raw mode,
 * keys and size changes to the daemon, its screen printed, the remote
 * command's exit status ours. */
#include "cmd/cmd_shell.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/control_client.h"
#include "cmd/shell_tty.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: sandbox-libkrun shell [--socket PATH] ID [-- CMD [ARGS...]]\n\n"
		     "Opens an interactive terminal in a sandbox (an id, a unique id prefix or a\n"
		     "name): CMD on a pseudo-terminal of this terminal's size, by default the\n"
		     "image's shell (bash when it has /bin/bash, else sh).  Keys go to it as\n"
		     "typed (the local terminal is in raw mode until it ends), size changes follow.\n"
		     "Not on a terminal, stdin is sent as it is and the size is 24 x 80.\n\n"
		     "  --socket PATH   the daemon's control socket (default $SANDBOX_CONTROL_SOCKET,\n"
		     "                  else " CONTROL_SOCKET_DEFAULT ")\n\n"
		     "exit status: the command's; %d when it could not run (no such sandbox, the\n"
		     "daemon unreachable or refusing us) or the terminal broke; %d on bad usage.\n",
		CLI_EXIT_DAEMON, CLI_EXIT_USAGE);
}

static int put(void *ud, int stream, const void *data, size_t len)
{
	(void)ud, (void)stream;
	const char *p = data;
	while (len > 0) {
		ssize_t n = write(STDOUT_FILENO, p, len);
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static json_t *request(const char *id, int argc, char **argv)
{
	uint16_t rows, cols;
	shell_tty_size(&rows, &cols);
	json_t *req = json_pack("{s:s, s:s, s:i, s:i}", "op", "shell", "sandbox", id, "rows", rows, "cols", cols);
	const char *term = getenv("TERM");
	if (req != NULL && term != NULL && term[0] != '\0' && strlen(term) <= CONTROL_TERM_MAX)
		json_object_set_new(req, "term", json_string(term));
	if (req == NULL || argc == 0)
		return req;
	json_t *args = json_array();
	for (int i = 0; args != NULL && i < argc; i++)
		json_array_append_new(args, json_string(argv[i]));
	if (args == NULL || json_object_set_new(req, "argv", args) < 0) {
		json_decref(req);
		return NULL;
	}
	return req;
}

/* The first line: {"terminal_id"} once the terminal runs, else the
 * daemon's error (cli_answer prints it). */
static int wait_started(struct cli_conn *c)
{
	sbx_error_t err = NULL;
	json_t *msg = NULL;
	int n = control_read_json(&c->r, &msg, &err);
	if (n > 0 && json_is_string(json_object_get(msg, "terminal_id"))) {
		json_decref(msg);
		return 0;
	}
	json_t *e = json_object_get(msg, "error");
	const char *code = json_string_value(json_object_get(e, "code"));
	const char *text = json_string_value(json_object_get(e, "message"));
	fprintf(stderr, "sandbox-libkrun shell: %s%s%s\n", code != NULL ? code : "", code != NULL ? ": " : "",
		text != NULL ? text : n == 0 ? "the daemon closed the connection without an answer"
			   : n < 0     ? sbx_error_msg(err)
				       : "unexpected message from the daemon");
	sbx_error_free(&err);
	bool refused = code != NULL && (strcmp(code, "refused") == 0 || strcmp(code, "busy") == 0);
	json_decref(msg);
	return refused || code == NULL ? CLI_EXIT_DAEMON : CLI_EXIT_FAILED;
}

int sbx_cmd_shell(int argc, char **argv)
{
	struct cli_opts o;
	int rc = cli_begin(&argc, argv, false, usage, &o);
	if (rc >= 0)
		return rc;
	int i = 1;
	if (i < argc && argv[i][0] == '-' && strcmp(argv[i], "--") != 0)
		return cli_usage_error(&o, "unknown option '%s'", argv[i]);
	if (i >= argc || strcmp(argv[i], "--") == 0)
		return cli_usage_error(&o, "missing the sandbox id");
	const char *id = argv[i++];
	if (i < argc && strcmp(argv[i], "--") != 0)
		return cli_usage_error(&o, "a command goes after '--': shell ID -- CMD ARGS...");
	if (i < argc && ++i == argc)
		return cli_usage_error(&o, "missing the command after '--'");
	if ((unsigned)(argc - i) > CONTROL_ARGV_MAX)
		return cli_usage_error(&o, "more than %u arguments", CONTROL_ARGV_MAX);
	struct cli_conn c;
	if ((rc = cli_open(&o, request(id, argc - i, argv + i), &c)) != 0)
		return rc;
	if ((rc = wait_started(&c)) != 0) {
		cli_close(&c);
		return rc == CLI_EXIT_FAILED ? CLI_EXIT_DAEMON : rc;
	}
	shell_tty_raw();
	struct shell_keys k = { .stop = { -1, -1 } };
	json_t *res = NULL;
	if (shell_keys_start(&k, c.fd) == 0)
		rc = cli_answer(&c, put, NULL, &res);
	else
		rc = CLI_EXIT_DAEMON;
	shell_keys_stop(&k);
	cli_close(&c);
	shell_tty_restore();
	if (rc != 0)
		return rc == CLI_EXIT_FAILED ? CLI_EXIT_DAEMON : rc;
	json_t *code = json_object_get(res, "exit_code");
	rc = json_is_integer(code) ? (int)(json_integer_value(code) & 0xff) : CLI_EXIT_DAEMON;
	json_decref(res);
	return rc;
}
