/* `sandbox-libkrun stop ID...`: the contract's stop through the control
 * socket. */
#include "cmd/cmd_stop.h"

#include <stdio.h>

#include "cmd/control_client.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: sandbox-libkrun stop [--socket PATH] ID...\n\n"
		     "Stops sandboxes (an id, a unique id prefix or a name each) and discards their\n"
		     "writes, as the engine's stop does; prints each id once stopped.\n\n"
		     "  --socket PATH   the daemon's control socket (default $SANDBOX_CONTROL_SOCKET,\n"
		     "                  else " CONTROL_SOCKET_DEFAULT ")\n\n"
		     "exit status: 0, 1 when a stop failed (the others are still tried), 2 on bad\n"
		     "usage, 125 when the daemon cannot be reached or refuses us.\n");
}

int sbx_cmd_stop(int argc, char **argv)
{
	struct cli_opts o;
	int rc = cli_begin(&argc, argv, false, usage, &o);
	if (rc >= 0)
		return rc;
	if (argc < 2)
		return cli_usage_error(&o, "missing the sandbox id");
	int status = 0;
	for (int i = 1; i < argc; i++) {
		json_t *res;
		rc = cli_call(&o, json_pack("{s:s, s:s}", "op", "stop", "sandbox", argv[i]), &res);
		if (rc == CLI_EXIT_DAEMON)
			return rc;
		if (rc != 0) {
			status = rc;
			continue;
		}
		printf("%s\n", json_string_value(json_object_get(res, "sandbox_id")));
		json_decref(res);
	}
	return fflush(stdout) == 0 ? status : CLI_EXIT_FAILED;
}
