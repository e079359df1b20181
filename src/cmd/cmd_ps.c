/* `sandbox-libkrun ps`: the daemon's sandboxes, creates in progress
 * included, as a table or (--json) the control socket's rows; with
 * --processes ID, what runs in one sandbox besides its execs. */
#include "cmd/cmd_ps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/quote.h"
#include "cmd/control_client.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: sandbox-libkrun ps [--json] [--socket PATH]\n"
		     "       sandbox-libkrun ps --processes ID [--json] [--socket PATH]\n\n"
		     "Lists the sandboxes of the running daemon, those being created too.\n"
		     "Columns: ID (first 12 characters; any unique prefix names a sandbox), NAME, IMAGE,\n"
		     "STATE (creating, running, pausing, paused, resuming, stopping), AGE, IDLE (since\n"
		     "the last exec, fs call or network payload), CPUS, MEMORY (MiB of guest RAM), RSS (MiB its QEMU holds),\n"
		     "NET (network on/off), PROCS (background processes running), TERMS (open\n"
		     "terminals), PORTS (published ports: 127.0.0.1:41234->8000/tcp), SNAPSHOT (the\n"
		     "snapshot it was created from, a fork's too: first 12 characters).\n\n"
		     "  --processes ID  the background processes (running and exited) and open\n"
		     "                  terminals of sandbox ID (an id, a unique id prefix or a name):\n"
		     "                  KIND, ID, PID (in the guest), STATE, STARTED, COMMAND\n"
		     "  --json          the rows as JSON: {\"sandboxes\": [...]} (with --processes:\n"
		     "                  {\"sandbox_id\", \"processes\": [...], \"terminals\": [...]}), full ids\n"
		     "  --socket PATH   the daemon's control socket (default $SANDBOX_CONTROL_SOCKET,\n"
		     "                  else " CONTROL_SOCKET_DEFAULT ")\n\n"
		     "exit status: 0, 1 when the daemon failed the request, 2 on bad usage, 125 when\n"
		     "the daemon cannot be reached or refuses us.\n");
}

static const char *str(json_t *r, const char *key)
{
	const char *s = json_string_value(json_object_get(r, key));
	return s != NULL ? s : "-";
}

static long long num(json_t *r, const char *key)
{
	return (long long)json_integer_value(json_object_get(r, key));
}

/* One column of the sandboxes' table: its header, its width (negative:
 * left-aligned), and its cell.  A new per-sandbox field is one more row
 * of COLUMNS. */
struct column {
	const char *header;
	int width;
	void (*cell)(json_t *r, char *buf, size_t len);
};

static void cell_id(json_t *r, char *buf, size_t len)
{
	snprintf(buf, len, "%.12s", str(r, "sandbox_id"));
}

static void cell_name(json_t *r, char *buf, size_t len)
{
	snprintf(buf, len, "%s", str(r, "name"));
}

static void cell_image(json_t *r, char *buf, size_t len)
{
	snprintf(buf, len, "%s", str(r, "image"));
}

static void cell_state(json_t *r, char *buf, size_t len)
{
	snprintf(buf, len, "%s", str(r, "state"));
}

static void cell_age(json_t *r, char *buf, size_t len)
{
	cli_duration(num(r, "age_secs"), buf, len);
}

static void cell_idle(json_t *r, char *buf, size_t len)
{
	cli_duration(num(r, "idle_secs"), buf, len);
}

static void cell_cpus(json_t *r, char *buf, size_t len)
{
	snprintf(buf, len, "%lld", num(r, "cpus"));
}

static void cell_memory(json_t *r, char *buf, size_t len)
{
	snprintf(buf, len, "%lld", num(r, "memory_mb"));
}

static void cell_rss(json_t *r, char *buf, size_t len)
{
	json_t *kib = json_object_get(r, "rss_kib");
	if (json_is_integer(kib))
		snprintf(buf, len, "%.1f", (double)json_integer_value(kib) / 1024.0);
	else
		snprintf(buf, len, "-");
}

static void cell_net(json_t *r, char *buf, size_t len)
{
	snprintf(buf, len, "%s", json_is_true(json_object_get(r, "network")) ? "on" : "off");
}

static void cell_procs(json_t *r, char *buf, size_t len)
{
	snprintf(buf, len, "%lld", num(json_object_get(r, "processes"), "running"));
}

static void cell_terms(json_t *r, char *buf, size_t len)
{
	snprintf(buf, len, "%lld", num(r, "terminals"));
}

/* As docker ps shows them: 127.0.0.1:41234->8000/tcp, ...; "-" without
 * any; "+N" for those the cell has no room for. */
static void cell_ports(json_t *r, char *buf, size_t len)
{
	json_t *ports = json_object_get(r, "ports");
	size_t n = json_array_size(ports), used = 0, i;
	json_t *p;
	snprintf(buf, len, "-");
	json_array_foreach(ports, i, p) {
		char one[64];
		snprintf(one, sizeof(one), "%s%.15s:%lld->%lld/tcp", i > 0 ? ", " : "", str(p, "address"),
			 num(p, "host"), num(p, "guest"));
		/* room for this one and a final " +N" */
		if (used + strlen(one) + 8 >= len) {
			snprintf(buf + used, len - used, " +%zu", n - i);
			return;
		}
		used += (size_t)snprintf(buf + used, len - used, "%s", one);
	}
}

/* A fork or a sandbox created from a snapshot: the snapshot's id, as
 * `snapshot ls` shows it. */
static void cell_snapshot(json_t *r, char *buf, size_t len)
{
	snprintf(buf, len, "%.12s", str(r, "snapshot_id"));
}

static const struct column COLUMNS[] = {
	{ "ID", -12, cell_id },	     { "NAME", -16, cell_name },    { "IMAGE", -10, cell_image },
	{ "STATE", -9, cell_state }, { "AGE", -5, cell_age },	    { "IDLE", -5, cell_idle },
	{ "CPUS", 4, cell_cpus },    { "MEMORY", 7, cell_memory }, { "RSS", 7, cell_rss },
	{ "NET", -3, cell_net },     { "PROCS", 5, cell_procs },   { "TERMS", 5, cell_terms },
	{ "PORTS", -5, cell_ports },	     { "SNAPSHOT", -12, cell_snapshot },
};
#define N_COLUMNS (sizeof(COLUMNS) / sizeof(COLUMNS[0]))

/* One line: the header (r NULL) or a row; the last column unpadded. */
static void print_line(json_t *r)
{
	for (size_t i = 0; i < N_COLUMNS; i++) {
		char cell[256];
		if (r != NULL)
			COLUMNS[i].cell(r, cell, sizeof(cell));
		else
			snprintf(cell, sizeof(cell), "%s", COLUMNS[i].header);
		bool last = i + 1 == N_COLUMNS;
		printf("%s%*s", i > 0 ? "  " : "", last && COLUMNS[i].width < 0 ? 0 : COLUMNS[i].width, cell);
	}
	putchar('\n');
}

static void print_table(json_t *res)
{
	print_line(NULL);
	size_t i;
	json_t *r;
	json_array_foreach(json_object_get(res, "sandboxes"), i, r)
		print_line(r);
}

/* The command as one line: plain words as they are, others quoted with
 * their control bytes escaped (sbx_quote); past COMMAND_MAX bytes cut,
 * ending in "...". */
#define COMMAND_MAX 200

static void print_command(json_t *argv)
{
	char line[COMMAND_MAX + 1] = "";
	size_t used = 0, i;
	bool cut = false;
	json_t *a;
	json_array_foreach(argv, i, a) {
		const char *s = json_string_value(a);
		bool plain = s != NULL && s[0] != '\0';
		for (const char *p = s; plain && *p != '\0'; p++)
			plain = (unsigned char)*p > ' ' && *p != '"' && *p != '\'' && *p != '\\' && *p != 0x7f;
		char *quoted = plain || s == NULL ? NULL : sbx_quote(s);
		const char *word = plain ? s : quoted != NULL ? quoted : "?";
		int n = snprintf(line + used, sizeof(line) - used, "%s%s", used > 0 ? " " : "", word);
		free(quoted);
		if (n < 0 || (size_t)n >= sizeof(line) - used) {
			cut = true;
			break;
		}
		used += (size_t)n;
	}
	printf("%s%s\n", line, cut ? "..." : "");
}

static void print_activity_row(const char *kind, json_t *r, const char *id_key, const char *state)
{
	char pid[24] = "-";
	if (json_integer_value(json_object_get(r, "pid")) > 0)
		snprintf(pid, sizeof(pid), "%lld", num(r, "pid"));
	printf("%-8s  %-12.12s  %7s  %-10s  %-24s  ", kind, str(r, id_key), pid, state, str(r, "started_at"));
	print_command(json_object_get(r, "argv"));
}

static void print_activity(json_t *res)
{
	printf("%-8s  %-12s  %7s  %-10s  %-24s  %s\n", "KIND", "ID", "PID", "STATE", "STARTED", "COMMAND");
	size_t i;
	json_t *r;
	json_array_foreach(json_object_get(res, "processes"), i, r) {
		char state[32];
		json_t *code = json_object_get(r, "exit_code");
		if (strcmp(str(r, "state"), "running") == 0)
			snprintf(state, sizeof(state), "running");
		else if (json_is_integer(code))
			snprintf(state, sizeof(state), "exited %lld", (long long)json_integer_value(code));
		else
			snprintf(state, sizeof(state), "exited ?");
		print_activity_row("process", r, "process_id", state);
	}
	json_array_foreach(json_object_get(res, "terminals"), i, r)
		print_activity_row("terminal", r, "terminal_id", "open");
}

int sbx_cmd_ps(int argc, char **argv)
{
	struct cli_opts o;
	int rc = cli_begin(&argc, argv, true, usage, &o);
	if (rc >= 0)
		return rc;
	const char *id = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--processes") == 0 && i + 1 < argc && id == NULL)
			id = argv[++i];
		else if (strncmp(argv[i], "--processes=", 12) == 0 && id == NULL)
			id = argv[i] + 12;
		else if (strcmp(argv[i], "--processes") == 0 && id == NULL)
			return cli_usage_error(&o, "--processes needs a sandbox id");
		else
			return cli_usage_error(&o, "unexpected argument '%s'", argv[i]);
	}
	if (id == NULL)
		return cli_show_answer(&o, json_pack("{s:s}", "op", "ps"), print_table);
	if (id[0] == '\0')
		return cli_usage_error(&o, "--processes needs a sandbox id");
	return cli_show_answer(&o, json_pack("{s:s, s:s}", "op", "processes", "sandbox", id), print_activity);
}
