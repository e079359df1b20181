/* `sandbox-libkrun logs [-f] ID`: the VM's console log. */
#include "cmd/cmd_logs.h"

#include <stdio.h>
#include <string.h>

#include "cmd/control_client.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: sandbox-libkrun logs [-f] [--socket PATH] ID\n\n"
		     "Prints how a running sandbox's VM booted and when (the first line), then its\n"
		     "console log (kernel and init messages, the first 1 MiB of it; a VM restored\n"
		     "from a template starts with the console of the boot that made the template)\n"
		     "and what the guest writes to /dev/console.\n\n"
		     "  -f, --follow    keep printing what comes until the sandbox stops\n"
		     "  --socket PATH   the daemon's control socket (default $SANDBOX_CONTROL_SOCKET,\n"
		     "                  else " CONTROL_SOCKET_DEFAULT ")\n\n"
		     "exit status: 0, 1 when the daemon failed the request (no such sandbox), 2 on\n"
		     "bad usage, 125 when the daemon cannot be reached or refuses us.\n");
}

static int to_stdout(void *ud, int stream, const void *data, size_t len)
{
	if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0)
		return -1;
	return 0;
}

int sbx_cmd_logs(int argc, char **argv)
{
	struct cli_opts o;
	int rc = cli_begin(&argc, argv, false, usage, &o);
	if (rc >= 0)
		return rc;
	bool follow = false;
	const char *id = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-f") == 0 || strcmp(argv[i], "--follow") == 0)
			follow = true;
		else if (argv[i][0] == '-')
			return cli_usage_error(&o, "unknown option '%s'", argv[i]);
		else if (id == NULL)
			id = argv[i];
		else
			return cli_usage_error(&o, "unexpected argument '%s'", argv[i]);
	}
	if (id == NULL)
		return cli_usage_error(&o, "missing the sandbox id");
	struct cli_conn c;
	rc = cli_open(&o, json_pack("{s:s, s:s, s:b}", "op", "logs", "sandbox", id, "follow", follow), &c);
	if (rc != 0)
		return rc;
	json_t *res;
	rc = cli_answer(&c, to_stdout, NULL, &res);
	cli_close(&c);
	json_decref(res);
	return rc;
}
