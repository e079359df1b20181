/* The client side of the control socket (docs/cli.md), shared by the
 * operator's commands (cmd_ps.c, cmd_status.c, cmd_exec.c, cmd_cp.c,
 * cmd_logs.c, cmd_stop.c): their options, the connection, the request and
 * its answer, and the exit codes. */
#ifndef SBX_CMD_CONTROL_CLIENT_H
#define SBX_CMD_CONTROL_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "control/control_proto.h"

#define CLI_EXIT_OK 0
#define CLI_EXIT_FAILED 1      /* the operation failed (the daemon said why) */
#define CLI_EXIT_USAGE 2
#define CLI_EXIT_TIMEOUT 124   /* exec: the command's deadline passed */
#define CLI_EXIT_DAEMON 125    /* daemon unreachable, or it refused us */

/* What every operator command takes besides its own arguments. */
struct cli_opts {
	const char *verb;   /* "ps" */
	const char *socket; /* --socket, else SANDBOX_CONTROL_SOCKET, else the default */
	bool json;          /* --json (ps, status) */
	bool help;
	bool quiet;         /* the daemon's failures not printed */
};

/* Every command's start: takes --socket PATH (or --socket=PATH), --json
 * when `json_ok`, --help/-h out of argv (argv[0] is the verb), leaving the
 * rest in order in argv/argc, and answers --help with `usage` on stdout.
 * Returns -1 when the command goes on, else its exit status (0 after
 * --help, CLI_EXIT_USAGE after printing the mistake). */
int cli_begin(int *argc, char **argv, bool json_ok, void (*usage)(FILE *out), struct cli_opts *o);
/* A whole command that shows the daemon's answer to `op` (ps, status): no
 * argument of its own, --json prints the answer as it is, else `print`
 * does.  Returns the exit status. */
int cli_show(int argc, char **argv, const char *op, void (*usage)(FILE *out), void (*print)(json_t *res));
/* Its second half: sends `req` (taken), prints the answer as JSON (--json)
 * or with `print`; returns the exit status. */
int cli_show_answer(const struct cli_opts *o, json_t *req, void (*print)(json_t *res));
/* Prints "sandbox-libkrun VERB: <message>" and "see `sandbox-libkrun VERB
 * --help`"; returns CLI_EXIT_USAGE. */
int cli_usage_error(const struct cli_opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "sandbox-libkrun VERB: <message>"; returns CLI_EXIT_FAILED. */
int cli_fail(const struct cli_opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

struct cli_conn {
	const struct cli_opts *o;
	int fd;
	struct control_reader r;
};

/* Connects and sends `req` (taken).  Returns 0, or CLI_EXIT_DAEMON after
 * printing why. */
int cli_open(const struct cli_opts *o, json_t *req, struct cli_conn *c);
void cli_close(struct cli_conn *c);
/* Reads the answer: frames go to sink with their stream (1, or exec's 2;
 * NULL: none expected), the final line gives 0 with *result (new
 * reference), or prints the error and returns CLI_EXIT_FAILED
 * (CLI_EXIT_DAEMON when refused or busy). */
int cli_answer(struct cli_conn *c, int (*sink)(void *ud, int stream, const void *data, size_t len), void *ud,
	       json_t **result);
/* One request, its answer without frames. */
int cli_call(const struct cli_opts *o, json_t *req, json_t **result);

/* "3s", "4m", "2h", "5d". */
void cli_duration(long long secs, char *buf, size_t len);

#endif
