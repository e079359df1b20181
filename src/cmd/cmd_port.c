/* `sandbox-libkrun port ID [GUEST_PORT]`: a sandbox's published ports
 * (create's `ports`) as `docker port` prints them. */
#include "cmd/cmd_port.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/control_client.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: sandbox-libkrun port [--json] [--socket PATH] ID [GUEST_PORT]\n\n"
		     "Prints the ports a sandbox (an id, a unique id prefix or a name) publishes, one\n"
		     "a line, as docker port does: 8000/tcp -> 127.0.0.1:41234.  With GUEST_PORT, only\n"
		     "the host address and port that publish it (exit status 1 when none does).\n\n"
		     "  --json          the daemon's answer: {\"sandbox_id\", \"ports\": [{guest, address, host}]}\n"
		     "  --socket PATH   the daemon's control socket (default $SANDBOX_CONTROL_SOCKET,\n"
		     "                  else " CONTROL_SOCKET_DEFAULT ")\n\n"
		     "exit status: 0, 1 when the daemon failed the request or GUEST_PORT is not\n"
		     "published, 2 on bad usage, 125 when the daemon cannot be reached or refuses us.\n");
}

int sbx_cmd_port(int argc, char **argv)
{
	struct cli_opts o;
	int rc = cli_begin(&argc, argv, true, usage, &o);
	if (rc >= 0)
		return rc;
	if (argc < 2 || argc > 3)
		return cli_usage_error(&o, argc < 2 ? "missing the sandbox id" : "too many arguments");
	long want = 0;
	if (argc == 3) {
		char *end;
		want = strtol(argv[2], &end, 10);
		if (*end != '\0' && strcmp(end, "/tcp") != 0)
			want = 0;
		if (want < 1 || want > 65535)
			return cli_usage_error(&o, "GUEST_PORT: expected a port 1-65535 (or PORT/tcp), got '%s'", argv[2]);
	}
	json_t *res;
	rc = cli_call(&o, json_pack("{s:s, s:s}", "op", "port", "sandbox", argv[1]), &res);
	if (rc != 0)
		return rc;
	if (o.json) {
		char *s = json_dumps(res, JSON_COMPACT);
		if (s != NULL)
			printf("%s\n", s);
		free(s);
		json_decref(res);
		return fflush(stdout) == 0 ? 0 : CLI_EXIT_FAILED;
	}
	size_t i, shown = 0;
	json_t *p;
	json_array_foreach(json_object_get(res, "ports"), i, p) {
		json_int_t guest = json_integer_value(json_object_get(p, "guest"));
		const char *addr = json_string_value(json_object_get(p, "address"));
		json_int_t host = json_integer_value(json_object_get(p, "host"));
		if (want != 0 && guest != want)
			continue;
		if (want != 0)
			printf("%s:%lld\n", addr != NULL ? addr : "?", (long long)host);
		else
			printf("%lld/tcp -> %s:%lld\n", (long long)guest, addr != NULL ? addr : "?", (long long)host);
		shown++;
	}
	json_decref(res);
	if (fflush(stdout) != 0)
		return CLI_EXIT_FAILED;
	if (want != 0 && shown == 0)
		return cli_fail(&o, "guest port %ld is not published", want);
	return 0;
}
