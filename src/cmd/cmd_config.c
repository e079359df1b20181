#include "cmd/cmd_config.h"

#include <stdio.h>
#include <string.h>

#include "adapter/config/config_file.h"
#include "adapter/config/config_print.h"
#include "cmd/environment_file.h"
#include "common/log.h"

#define EXIT_USAGE 2

static void usage(FILE *out)
{
	fprintf(out, "usage: sandbox-libkrun config check FILE\n\n"
		     "Reads FILE (YAML or JSON, the keys of serve's configuration) with serve's parser,\n"
		     "prints its warnings on stderr (an unknown key, with the nearest known one) and\n"
		     "then the effective configuration, defaults filled in, as JSON on stdout.\n"
		     "registry_auth passwords are shown as \"<hidden>\"; memory_budget_mb and\n"
		     "krunfw_path are null when left to the host.\n\n"
		     "exit status: 0 when serve would accept FILE, %d (the error on stderr) when not.\n",
		EXIT_USAGE);
}

static int usage_error(const char *what)
{
	fprintf(stderr, "sandbox-libkrun config: %s; see `sandbox-libkrun config --help`\n", what);
	return EXIT_USAGE;
}

int sbx_cmd_config(int argc, char **argv)
{
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		usage(stdout);
		return 0;
	}
	if (argc < 2 || strcmp(argv[1], "check") != 0)
		return usage_error(argc < 2 ? "a subcommand is required (check)" : "unknown subcommand");
	if (argc == 3 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
		usage(stdout);
		return 0;
	}
	if (argc != 3)
		return usage_error(argc < 3 ? "check needs the FILE to check" : "check takes one FILE");
	/* Warnings are what this command is for, whatever SANDBOX_LOG says. */
	sbx_log_set_level(SBX_LOG_WARN);
	sbx_error_t err = NULL;
	struct sbx_config *cfg = sbx_config_load_any(argv[2], &err);
	json_t *out = cfg != NULL ? sbx_config_to_json(cfg, &err) : NULL;
	if (out != NULL && cfg->n_image_allowlist == 0)
		sbx_warn("config: image_allowlist is empty: no image may be created");
	environment_file_check();
	sbx_config_free(cfg);
	if (out == NULL) {
		fprintf(stderr, "sandbox-libkrun config: %s\n", sbx_error_msg(err));
		sbx_error_free(&err);
		return EXIT_USAGE;
	}
	int rc = json_dumpf(out, stdout, JSON_INDENT(2)) == 0 && fputc('\n', stdout) != EOF && fflush(stdout) == 0;
	json_decref(out);
	if (!rc) {
		perror("sandbox-libkrun config: stdout");
		return 1;
	}
	return 0;
}
