/* sandbox-libkrun: the iii sandbox adapter.  This file only dispatches the
 * command line to the part that owns each command. */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd_config.h"
#include "cmd/cmd_cp.h"
#include "cmd/cmd_exec.h"
#include "cmd/cmd_image.h"
#include "cmd/cmd_logs.h"
#include "cmd/cmd_ps.h"
#include "cmd/cmd_run.h"
#include "cmd/cmd_serve.h"
#include "cmd/cmd_shell.h"
#include "cmd/cmd_status.h"
#include "cmd/cmd_port.h"
#include "cmd/cmd_snapshot.h"
#include "cmd/cmd_stop.h"
#include "cmd/cmd_vm.h"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "serve", sbx_cmd_serve, "connect to the iii engine and serve sandbox-libkrun::* (the worker)" },
	{ "run", sbx_cmd_run, "run code in a fresh sandbox: run --image python --code 'print(6*7)'" },
	{ "image", sbx_cmd_image, "the image cache: image [--config FILE] pull|import|ls|rm ..." },
	{ "config", sbx_cmd_config, "check a configuration file: config check FILE (warnings, effective config)" },
	{ "vm", sbx_cmd_vm, "boot a VM directly: vm run [options] --rootfs DIR|IMAGE | --image NAME -- CMD ARGS..." },
	{ "ps", sbx_cmd_ps, "the running daemon's sandboxes (control socket): ps [--json]" },
	{ "exec", sbx_cmd_exec, "run a command in a sandbox: exec ID -- CMD ARGS..." },
	{ "shell", sbx_cmd_shell, "an interactive terminal in a sandbox: shell ID [-- CMD ARGS...]" },
	{ "cp", sbx_cmd_cp, "copy files in or out of a sandbox: cp SRC ID:/path, cp ID:/path DST" },
	{ "logs", sbx_cmd_logs, "a sandbox VM's console log: logs [-f] ID" },
	{ "stop", sbx_cmd_stop, "stop sandboxes: stop ID..." },
	{ "port", sbx_cmd_port, "a sandbox's published ports: port ID [GUEST_PORT]" },
	{ "snapshot", sbx_cmd_snapshot, "the snapshots of sandboxes: snapshot ls, snapshot rm ID..." },
	{ "status", sbx_cmd_status, "the running daemon: engine, jail, memory, pool: status [--json]" },
};

static void usage(FILE *out)
{
	fprintf(out, "usage: sandbox-libkrun COMMAND [ARGS...]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\n  --help     this text\n  --version  print the version\n\n"
		     "Run 'sandbox-libkrun COMMAND --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("sandbox-libkrun %s\n", SBX_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	}
	fprintf(stderr, "sandbox-libkrun: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return 2;
}
