/* `sandbox-libkrun run`: builds the same request the engine would send to
 * sandbox-libkrun::run, serves it with a private adapter and prints the
 * result: the code's stdout and stderr as they are, its exit status as ours. */
#include "cmd/cmd_run.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapter/adapter.h"
#include "adapter/config/config_file.h"
#include "adapter/sandbox/lang.h"
#include "adapter/vm_backend/vm_backend.h"
#include "common/base64.h"
#include "common/cleanup.h"
#include "common/log.h"
#include "common/scodes.h"
#include "vm/leftovers.h"

#define EXIT_USAGE 2
#define EXIT_TIMEOUT 124
#define EXIT_FAILED 125
#define RUN_MAX_INPUT (64u * 1024u * 1024u) /* --file and --stdin */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sandbox-libkrun run --image NAME (--code CODE | --file PATH) [options]\n\n"
		"Boots a sandbox, runs the code in it, prints its stdout and stderr and exits with\n"
		"its exit status; the sandbox is stopped afterwards.  The same as the engine's\n"
		"sandbox-libkrun::run.\n\n"
		"options:\n"
		"  --image NAME      catalog image: python, node or a custom_images key\n"
		"  --code CODE       the program text\n"
		"  --file PATH       read the program text from PATH ('-' for standard input)\n"
		"  --lang LANG       node|js|javascript, python|py, shell|sh|bash, or an interpreter\n"
		"                    in the image; default: the image name when it is python or node\n"
		"  --stdin           pass our standard input to the code\n"
		"  --timeout-ms N    deadline of the code (default 300000, capped by max_exec_timeout_ms)\n"
		"  --network         give the sandbox eth0 (gateway 10.0.2.2 = the host, on the\n"
		"                    config's network_policy.host_ports only); denials print on stderr\n"
		"  --config FILE     configuration with the engine config's keys, YAML or JSON\n"
		"                    (as serve --config; `sandbox-libkrun config check FILE` shows\n"
		"                    what it sets).  Without it the defaults apply, except\n"
		"                    image_allowlist, which is [python, node]\n"
		"                    here (the engine's default is [], which denies everything)\n\n"
		"exit status: the code's, or %d on a timeout (after what the code had printed),\n"
		"%d when the sandbox failed (the reason is on stderr), %d on bad usage.\n",
		EXIT_TIMEOUT, EXIT_FAILED, EXIT_USAGE);
}

static char *read_all(FILE *f, size_t *len, sbx_error_t *err)
{
	size_t cap = 64 * 1024, n = 0;
	char *buf = malloc(cap + 1);
	if (buf == NULL)
		return sbx_error_errno(err, ENOMEM, "input"), NULL;
	for (;;) {
		if (n == cap) {
			if (cap >= RUN_MAX_INPUT) {
				free(buf);
				return sbx_error_set(err, EFBIG, "input larger than %u bytes", RUN_MAX_INPUT), NULL;
			}
			char *nb = realloc(buf, cap * 2 + 1);
			if (nb == NULL) {
				free(buf);
				return sbx_error_errno(err, ENOMEM, "input"), NULL;
			}
			buf = nb;
			cap *= 2;
		}
		size_t k = fread(buf + n, 1, cap - n, f);
		n += k;
		if (k == 0)
			break;
	}
	if (ferror(f)) {
		free(buf);
		return sbx_error_errno(err, EIO, "read"), NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

static char *read_path(const char *path, size_t *len, sbx_error_t *err)
{
	if (strcmp(path, "-") == 0)
		return read_all(stdin, len, err);
	cleanup_file FILE *f = fopen(path, "rbe");
	if (f == NULL)
		return sbx_error_errno(err, errno, "%s", path), NULL;
	char *s = read_all(f, len, err);
	if (s == NULL)
		sbx_error_prefix(err, "%s", path);
	return s;
}

/* One line naming the mistake, not the whole help. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("sandbox-libkrun run: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("; see `sandbox-libkrun run --help`\n", stderr);
	return -1;
}

static struct sbx_config *cli_config(const char *path, sbx_error_t *err)
{
	if (path != NULL)
		return sbx_config_load_any(path, err);
	json_t *v = json_pack("{s:[s, s]}", "image_allowlist", "python", "node");
	struct sbx_config *cfg = v != NULL ? sbx_config_parse(v, err) : NULL;
	if (v == NULL)
		sbx_error_errno(err, ENOMEM, "config");
	json_decref(v);
	return cfg;
}

struct cli {
	const char *image, *code, *file, *lang, *config;
	char *file_text; /* --file's content, read before anything boots */
	size_t file_len;
	bool use_stdin, network;
	long long timeout_ms;
};

static int parse_args(int argc, char **argv, struct cli *c)
{
	static const struct option opts[] = {
		{ "image", required_argument, NULL, 'i' },   { "code", required_argument, NULL, 'c' },
		{ "file", required_argument, NULL, 'f' },    { "lang", required_argument, NULL, 'l' },
		{ "stdin", no_argument, NULL, 's' },         { "timeout-ms", required_argument, NULL, 't' },
		{ "config", required_argument, NULL, 'C' }, { "help", no_argument, NULL, 'h' },
		{ "network", no_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	c->timeout_ms = -1;
	int o;
	char *end;
	optind = 1;
	opterr = 0; /* our own one-line messages */
	while ((o = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (o) {
		case 'i': c->image = optarg; break;
		case 'c': c->code = optarg; break;
		case 'f': c->file = optarg; break;
		case 'l': c->lang = optarg; break;
		case 's': c->use_stdin = true; break;
		case 'n': c->network = true; break;
		case 'C': c->config = optarg; break;
		case 't':
			errno = 0;
			c->timeout_ms = strtoll(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || end == optarg || c->timeout_ms < 0)
				return usage_error("--timeout-ms needs a number of milliseconds, got '%s'", optarg);
			break;
		case 'h': usage(stdout); exit(0);
		case ':': return usage_error("%s needs a value", argv[optind - 1]);
		default: return optopt != 0 ? usage_error("unknown option '-%c'", optopt)
					    : usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (c->image == NULL)
		return usage_error("--image is required");
	if (c->code != NULL && c->file != NULL)
		return usage_error("--code and --file both give the code: use one");
	if (c->code == NULL && c->file == NULL)
		return usage_error("one of --code or --file is required");
	if (c->code != NULL && c->code[0] == '\0')
		return usage_error("--code is empty");
	if (c->lang == NULL && (strcmp(c->image, "python") == 0 || strcmp(c->image, "node") == 0))
		c->lang = c->image;
	if (c->lang == NULL)
		return usage_error("--lang is required for image '%s'", c->image);
	sbx_error_t err = NULL;
	if (run_lang_check(c->lang, &err) < 0) {
		usage_error("--lang: %s", sbx_error_msg(err));
		sbx_error_free(&err);
		return -1;
	}
	if (c->use_stdin && c->file != NULL && strcmp(c->file, "-") == 0)
		return usage_error("--file - and --stdin both want standard input");
	return 0;
}

/* --file's content, before any VM boots: a file that cannot be read, or
 * holds no program, is a usage error. */
static int read_file_arg(struct cli *c)
{
	if (c->file == NULL)
		return 0;
	sbx_error_t err = NULL;
	c->file_text = read_path(c->file, &c->file_len, &err);
	if (c->file_text == NULL) {
		usage_error("--file: %s", sbx_error_msg(err));
		sbx_error_free(&err);
		return -1;
	}
	if (strlen(c->file_text) != c->file_len)
		return usage_error("--file %s: the code contains a NUL byte", c->file);
	if (c->file_len == 0)
		return usage_error("--file %s is empty", c->file);
	return 0;
}

/* The request of contract §7.7. */
static json_t *build_request(const struct cli *c, sbx_error_t *err)
{
	const char *code = c->file_text != NULL ? c->file_text : c->code;
	json_t *req = json_pack("{s:s, s:s, s:s}", "image", c->image, "lang", c->lang, "code", code);
	if (req == NULL)
		return sbx_error_set(err, EINVAL, "the code is not valid UTF-8"), NULL;
	if (c->timeout_ms >= 0)
		json_object_set_new(req, "timeout_ms", json_integer(c->timeout_ms));
	if (c->network)
		json_object_set_new(req, "network", json_true());
	if (c->use_stdin) {
		size_t n;
		cleanup_free char *in = read_all(stdin, &n, err);
		cleanup_free char *b64 = in != NULL ? sbx_base64_encode((unsigned char *)in, n, err) : NULL;
		if (b64 == NULL || json_object_set_new(req, "stdin", json_string(b64)) < 0) {
			json_decref(req);
			return NULL;
		}
	}
	return req;
}

/* The code's output from a reply, or from the S200 envelope of a timeout
 * (what it had printed by its deadline). */
static void print_output(json_t *o)
{
	/* By length: the output may hold NUL bytes. */
	json_t *so = json_object_get(o, "stdout"), *se = json_object_get(o, "stderr");
	if (json_is_string(so))
		fwrite(json_string_value(so), 1, json_string_length(so), stdout);
	fflush(stdout);
	if (json_is_string(se))
		fwrite(json_string_value(se), 1, json_string_length(se), stderr);
	if (json_is_true(json_object_get(o, "stdout_truncated")) || json_is_true(json_object_get(o, "stderr_truncated")))
		fprintf(stderr, "sandbox-libkrun run: output was cut at 1 MiB per stream\n");
}

static int print_reply(json_t *out)
{
	print_output(out);
	json_t *code = json_object_get(out, "exit_code");
	return json_is_integer(code) ? (int)(json_integer_value(code) & 0xff) : EXIT_FAILED;
}

/* Error bodies carry the envelope as JSON after "handler error: ". */
static int print_error(json_t *out)
{
	const char *msg = json_string_value(json_object_get(out, "message"));
	const char *brace = msg != NULL ? strchr(msg, '{') : NULL;
	json_t *env = brace != NULL ? json_loads(brace, JSON_ALLOW_NUL, NULL) : NULL;
	const char *code = json_string_value(json_object_get(env, "code"));
	const char *text = json_string_value(json_object_get(env, "message"));
	print_output(env);
	fprintf(stderr, "sandbox-libkrun run: %s%s%s\n", code != NULL ? code : "", code != NULL ? ": " : "",
		text != NULL ? text : msg != NULL ? msg : "failed");
	int status = code != NULL && strcmp(code, SBX_S_EXEC_TIMEOUT) == 0 ? EXIT_TIMEOUT : EXIT_FAILED;
	json_decref(env);
	return status;
}

int sbx_cmd_run(int argc, char **argv)
{
	struct cli c = { 0 };
	if (parse_args(argc, argv, &c) < 0 || read_file_arg(&c) < 0) {
		free(c.file_text);
		return EXIT_USAGE;
	}
	/* The terminal is for the code's output: only warnings by default. */
	if (getenv("SANDBOX_LOG") == NULL)
		sbx_log_set_level(SBX_LOG_WARN);
	else if (sbx_log_init_from_env() < 0)
		sbx_warn("SANDBOX_LOG has an unknown value; using info");
	sbx_error_t err = NULL;
	if (sbx_log_format_from_env(&err) < 0) {
		fprintf(stderr, "sandbox-libkrun run: %s\n", sbx_error_msg(err));
		sbx_error_free(&err);
		return EXIT_USAGE;
	}
	struct sbx_config *cfg = cli_config(c.config, &err);
	json_t *req = cfg != NULL ? build_request(&c, &err) : NULL;
	free(c.file_text);
	if (req == NULL) {
		fprintf(stderr, "sandbox-libkrun run: %s\n", sbx_error_msg(err));
		sbx_error_free(&err);
		sbx_config_free(cfg);
		return cfg == NULL && c.config != NULL ? EXIT_USAGE : EXIT_FAILED;
	}
	/* This process's one decision, before the budget is sized. */
	if (sbx_config_decide_accel(cfg, &err) < 0) {
		fprintf(stderr, "sandbox-libkrun run: %s\n", sbx_error_msg(err));
		sbx_error_free(&err);
		sbx_config_free(cfg);
		json_decref(req);
		return EXIT_FAILED;
	}
	struct sbx_jail_host *jail = sbx_jail_host_new(cfg->jail, cfg->jail_uid_base, &err);
	if (jail == NULL) {
		fprintf(stderr, "sandbox-libkrun run: %s\n", sbx_error_msg(err));
		sbx_error_free(&err);
		sbx_config_free(cfg);
		json_decref(req);
		return EXIT_USAGE;
	}
	sbx_vm_remove_leftovers();
	sbx_jail_remove_leftovers(jail);
	struct sbx_adapter *a = sbx_adapter_new(cfg, &err);
	if (a == NULL)
		sbx_jail_host_free(jail);
	void *backend = a != NULL ? vm_backend_new(a->cfg, jail, &err) : NULL;
	int status = EXIT_FAILED;
	if (backend == NULL || sbx_adapter_use_backend(a, &vm_backend_ops, backend, &err) < 0) {
		fprintf(stderr, "sandbox-libkrun run: %s\n", sbx_error_msg(err));
		sbx_error_free(&err);
	} else {
		json_t *out = NULL;
		status = sbx_adapter_call(a, "run", req, &out) == 0 ? print_reply(out) : print_error(out);
		json_decref(out);
	}
	json_decref(req);
	sbx_adapter_free(a);
	vm_backend_free(backend);
	return status;
}
