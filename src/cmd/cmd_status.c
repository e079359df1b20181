/* `sandbox-libkrun status`: the daemon as the control socket sees it. */
#include "cmd/cmd_status.h"

#include <stdio.h>

#include "cmd/control_client.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: sandbox-libkrun status [--json] [--socket PATH]\n\n"
		     "The running daemon: its version, the engine connection, the jail in force, the\n"
		     "memory budget, the sandboxes, the warm pool and standby settings.\n\n"
		     "  --json          the answer as JSON\n"
		     "  --socket PATH   the daemon's control socket (default $SANDBOX_CONTROL_SOCKET,\n"
		     "                  else " CONTROL_SOCKET_DEFAULT ")\n\n"
		     "exit status: 0, 1 when the daemon failed the request, 2 on bad usage, 125 when\n"
		     "the daemon cannot be reached or refuses us.\n");
}

static long long num(json_t *o, const char *k)
{
	return (long long)json_integer_value(json_object_get(o, k));
}

static void print_status(json_t *s)
{
	json_t *eng = json_object_get(s, "engine"), *jail = json_object_get(s, "jail"),
	       *mem = json_object_get(s, "memory"), *pool = json_object_get(s, "warm_pool");
	printf("%-10s  %s\n", "FIELD", "VALUE");
	printf("%-10s  %s\n", "version", json_string_value(json_object_get(s, "version")));
	printf("%-10s  %s (%s)\n", "engine", json_string_value(json_object_get(eng, "url")),
	       json_is_true(json_object_get(eng, "connected")) ? "connected" : "not connected");
	printf("%-10s  %s\n", "jail", json_string_value(json_object_get(jail, "describe")));
	printf("%-10s  %lld of %lld MiB committed (%lld VMs, templates %lld MiB, logs of %lld background "
	       "processes %lld KiB)\n",
	       "memory", num(mem, "committed_mib"), num(mem, "budget_mib"), num(mem, "vms"), num(mem, "templates_mib"),
	       num(mem, "background_processes"), num(mem, "background_logs_bytes") / 1024);
	printf("%-10s  %lld of %lld\n", "sandboxes", num(s, "sandboxes"), num(s, "max_concurrent_sandboxes"));
	printf("%-10s  ", "pool");
	const char *img;
	json_t *n;
	size_t k = 0;
	json_object_foreach(json_object_get(pool, "images"), img, n)
		printf("%s%s=%lld", k++ > 0 ? ", " : "", img, (long long)json_integer_value(n));
	printf("%s (max %lld)\n", k == 0 ? "none" : "", num(pool, "max"));
	printf("%-10s  %s\n", "standby", json_is_true(json_object_get(s, "standby")) ? "on" : "off");
}

int sbx_cmd_status(int argc, char **argv)
{
	return cli_show(argc, argv, "status", usage, print_status);
}
