/* `sandbox-libkrun ps`: the daemon's sandboxes, creates in progress
 * included, as a table or (--json) the control socket's rows. */
#include "cmd/cmd_ps.h"

#include <stdio.h>

#include "cmd/control_client.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: sandbox-libkrun ps [--json] [--socket PATH]\n\n"
		     "Lists the sandboxes of the running daemon, those being created too.\n"
		     "Columns: ID (first 12 characters; any unique prefix names a sandbox), NAME, IMAGE,\n"
		     "STATE (creating, running, stopping), AGE, IDLE (since the last exec, fs call or\n"
		     "network payload), CPUS, MEMORY (MiB of guest RAM), RSS (MiB its QEMU holds),\n"
		     "NET (network on/off).\n\n"
		     "  --json          the rows as JSON: {\"sandboxes\": [...]}, full ids\n"
		     "  --socket PATH   the daemon's control socket (default $SANDBOX_CONTROL_SOCKET,\n"
		     "                  else " CONTROL_SOCKET_DEFAULT ")\n\n"
		     "exit status: 0, 1 when the daemon failed the request, 2 on bad usage, 125 when\n"
		     "the daemon cannot be reached or refuses us.\n");
}

static void print_row(json_t *r)
{
	char age[16], idle[16], rss[24] = "-";
	cli_duration(json_integer_value(json_object_get(r, "age_secs")), age, sizeof(age));
	cli_duration(json_integer_value(json_object_get(r, "idle_secs")), idle, sizeof(idle));
	json_t *kib = json_object_get(r, "rss_kib");
	if (json_is_integer(kib))
		snprintf(rss, sizeof(rss), "%.1f", (double)json_integer_value(kib) / 1024.0);
	const char *name = json_string_value(json_object_get(r, "name"));
	printf("%-12.12s  %-16s  %-10s  %-9s  %-5s  %-5s  %4lld  %7lld  %7s  %s\n",
	       json_string_value(json_object_get(r, "sandbox_id")), name != NULL ? name : "-",
	       json_string_value(json_object_get(r, "image")), json_string_value(json_object_get(r, "state")), age, idle,
	       (long long)json_integer_value(json_object_get(r, "cpus")),
	       (long long)json_integer_value(json_object_get(r, "memory_mb")), rss,
	       json_is_true(json_object_get(r, "network")) ? "on" : "off");
}

static void print_table(json_t *res)
{
	printf("%-12s  %-16s  %-10s  %-9s  %-5s  %-5s  %4s  %7s  %7s  %s\n", "ID", "NAME", "IMAGE", "STATE", "AGE",
	       "IDLE", "CPUS", "MEMORY", "RSS", "NET");
	size_t i;
	json_t *r;
	json_array_foreach(json_object_get(res, "sandboxes"), i, r)
		print_row(r);
}

int sbx_cmd_ps(int argc, char **argv)
{
	return cli_show(argc, argv, "ps", usage, print_table);
}
