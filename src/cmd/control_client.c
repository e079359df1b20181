/* The operator commands' side of the control socket (control_client.h). */
#include "cmd/control_client.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* "sandbox-libkrun VERB: <message>", without the newline. */
__attribute__((format(printf, 2, 0))) static void say(const struct cli_opts *o, const char *fmt, va_list ap)
{
	fprintf(stderr, "sandbox-libkrun %s: ", o->verb);
	vfprintf(stderr, fmt, ap);
}

int cli_usage_error(const struct cli_opts *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say(o, fmt, ap);
	va_end(ap);
	fprintf(stderr, "; see `sandbox-libkrun %s --help`\n", o->verb);
	return CLI_EXIT_USAGE;
}

int cli_fail(const struct cli_opts *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say(o, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return CLI_EXIT_FAILED;
}

static int parse_common(int *argc, char **argv, bool json_ok, struct cli_opts *o)
{
	o->verb = argv[0];
	const char *env = getenv("SANDBOX_CONTROL_SOCKET");
	o->socket = env != NULL && env[0] != '\0' ? env : CONTROL_SOCKET_DEFAULT;
	o->json = o->help = o->quiet = false;
	int out = 1;
	bool rest = false; /* after "--": everything is the command's */
	for (int i = 1; i < *argc; i++) {
		const char *a = argv[i];
		if (!rest && strcmp(a, "--") == 0) {
			rest = true;
			argv[out++] = argv[i];
		} else if (!rest && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
			o->help = true;
		} else if (!rest && strcmp(a, "--socket") == 0) {
			if (i + 1 >= *argc)
				return cli_usage_error(o, "--socket needs a path");
			o->socket = argv[++i];
		} else if (!rest && strncmp(a, "--socket=", 9) == 0) {
			o->socket = a + 9;
		} else if (!rest && json_ok && strcmp(a, "--json") == 0) {
			o->json = true;
		} else {
			argv[out++] = argv[i];
		}
	}
	*argc = out;
	if (o->socket[0] == '\0')
		return cli_usage_error(o, "--socket needs a path");
	return 0;
}

int cli_begin(int *argc, char **argv, bool json_ok, void (*usage)(FILE *out), struct cli_opts *o)
{
	int rc = parse_common(argc, argv, json_ok, o);
	if (rc != 0)
		return rc;
	if (o->help) {
		usage(stdout);
		return 0;
	}
	return -1;
}

int cli_show(int argc, char **argv, const char *op, void (*usage)(FILE *out), void (*print)(json_t *res))
{
	struct cli_opts o;
	int rc = cli_begin(&argc, argv, true, usage, &o);
	if (rc >= 0)
		return rc;
	if (argc > 1)
		return cli_usage_error(&o, "unexpected argument '%s'", argv[1]);
	return cli_show_answer(&o, json_pack("{s:s}", "op", op), print);
}

int cli_show_answer(const struct cli_opts *o, json_t *req, void (*print)(json_t *res))
{
	json_t *res;
	int rc;
	if ((rc = cli_call(o, req, &res)) != 0)
		return rc;
	if (o->json) {
		json_dumpf(res, stdout, JSON_INDENT(2));
		putchar('\n');
	} else {
		print(res);
	}
	json_decref(res);
	return fflush(stdout) == 0 ? 0 : CLI_EXIT_FAILED;
}

int cli_open(const struct cli_opts *o, json_t *req, struct cli_conn *c)
{
	c->o = o;
	c->fd = -1;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (req == NULL) {
		fprintf(stderr, "sandbox-libkrun %s: out of memory\n", o->verb);
		return CLI_EXIT_FAILED;
	}
	if (strlen(o->socket) >= sizeof(sa.sun_path)) {
		json_decref(req);
		return cli_usage_error(o, "socket path too long: %s", o->socket);
	}
	memcpy(sa.sun_path, o->socket, strlen(o->socket) + 1);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "sandbox-libkrun %s: cannot reach the daemon at %s: %s (is `sandbox-libkrun serve` "
				"running? --socket PATH names another)\n",
			o->verb, o->socket, strerror(errno));
		json_decref(req);
		cli_close(c);
		return CLI_EXIT_DAEMON;
	}
	control_reader_init(&c->r, c->fd);
	sbx_error_t err = NULL;
	/* A send the daemon cut short (it refused us) is not the story: its
	 * refusal, written before it closed, is what cli_answer reads. */
	if (control_send_json(c->fd, req, &err) < 0)
		sbx_error_free(&err);
	json_decref(req);
	return 0;
}

void cli_close(struct cli_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

static int fail(struct cli_conn *c, const char *code, const char *msg)
{
	if (!c->o->quiet)
		fprintf(stderr, "sandbox-libkrun %s: %s%s%s\n", c->o->verb, code != NULL ? code : "", code != NULL ? ": " : "",
		msg);
	return code != NULL && (strcmp(code, "refused") == 0 || strcmp(code, "busy") == 0) ? CLI_EXIT_DAEMON
											     : CLI_EXIT_FAILED;
}

int cli_answer(struct cli_conn *c, int (*sink)(void *ud, int stream, const void *data, size_t len), void *ud,
	       json_t **result)
{
	*result = NULL;
	uint8_t *buf = NULL;
	int rc = CLI_EXIT_FAILED;
	for (;;) {
		sbx_error_t err = NULL;
		json_t *msg;
		int n = control_read_json(&c->r, &msg, &err);
		if (n <= 0) {
			rc = fail(c, NULL, n == 0 ? "the daemon closed the connection without an answer" : sbx_error_msg(err));
			sbx_error_free(&err);
			break;
		}
		json_t *ok = json_object_get(msg, "ok");
		if (json_is_true(ok)) {
			*result = json_incref(json_object_get(msg, "result"));
			json_decref(msg);
			rc = 0;
			break;
		}
		if (json_is_false(ok)) {
			json_t *e = json_object_get(msg, "error");
			rc = fail(c, json_string_value(json_object_get(e, "code")),
				  json_string_value(json_object_get(e, "message")) ?: "failed");
			json_decref(msg);
			break;
		}
		size_t len;
		int stream;
		n = control_frame_parse(msg, &len, &stream, &err);
		json_decref(msg);
		if (n <= 0 || sink == NULL) {
			rc = fail(c, NULL, n < 0 ? sbx_error_msg(err) : "unexpected message from the daemon");
			sbx_error_free(&err);
			break;
		}
		if (buf == NULL && (buf = malloc(CONTROL_FRAME_MAX)) == NULL) {
			rc = fail(c, NULL, "out of memory");
			break;
		}
		if (control_read_exact(&c->r, buf, len, &err) < 0) {
			rc = fail(c, NULL, sbx_error_msg(err));
			sbx_error_free(&err);
			break;
		}
		if (sink(ud, stream, buf, len) < 0) {
			rc = CLI_EXIT_FAILED;
			break;
		}
	}
	free(buf);
	return rc;
}

int cli_call(const struct cli_opts *o, json_t *req, json_t **result)
{
	struct cli_conn c;
	int rc = cli_open(o, req, &c);
	if (rc != 0)
		return rc;
	rc = cli_answer(&c, NULL, NULL, result);
	cli_close(&c);
	return rc;
}

void cli_duration(long long secs, char *buf, size_t len)
{
	if (secs < 120)
		snprintf(buf, len, "%llds", secs);
	else if (secs < 7200)
		snprintf(buf, len, "%lldm", secs / 60);
	else if (secs < 172800)
		snprintf(buf, len, "%lldh", secs / 3600);
	else
		snprintf(buf, len, "%lldd", secs / 86400);
}
