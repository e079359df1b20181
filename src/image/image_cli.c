#include "image/image_cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "image/image_import.h"
#include "image/image_index.h"
#include "image/image_lookup.h"
#include "image/image_pull.h"
#include "image/image_store.h"

static const char usage_text[] =
	"usage: sandbox-libkrun image [--config FILE] COMMAND\n"
	"  pull NAME|REF [--no-template] [--json]\n"
	"                           pull an image (catalog name or OCI ref) into the cache and\n"
	"                           make its VM template (booted once at default_cpus and\n"
	"                           default_memory_mb), so the daemon's first create of it\n"
	"                           restores; --no-template skips that\n"
	"  import PATH [--ref REF] [--no-template] [--json]\n"
	"                           load an OCI layout directory or a docker save archive (and\n"
	"                           make its VM template, as pull does)\n"
	"  ls [--json | -q]         list cached images: ref, digest, size, last used; -q: refs\n"
	"                           only, one a line; --json: every field, full digests and the\n"
	"                           erofs image's path\n"
	"  rm NAME|REF|DIGEST       forget an image and delete its disk if unused\n"
	"--config FILE: the adapter's configuration (JSON or YAML, as serve --config), checked as\n"
	"serve checks it; the image commands use registry_mirrors, registry_auth, custom_images,\n"
	"auto_install, image_max_entries, image_max_mb and image_max_blob_mb; pull's template\n"
	"also the VM's keys (default_cpus, default_memory_mb, accel, scratch_disk_mb,\n"
	"krunfw_path, jail, ...): give it the daemon's file so they match.\n"
	"pull and import print the image as ls does (--json: one JSON object on one line);\n"
	"layer progress is shown only on a terminal, the template's two lines (or its\n"
	"warning) always on stderr.\n";

static void on_layer(void *ud, size_t index, size_t count, const char *digest, uint64_t done, uint64_t total)
{
	fprintf(stderr, "\r[%zu/%zu] %.19s  %6.1f / %6.1f MB", index + 1, count, digest, (double)done / 1e6,
		(double)total / 1e6);
	if (done == total && total != 0)
		fputc('\n', stderr);
	fflush(stderr);
}

enum ls_format { LS_TABLE, LS_JSON, LS_QUIET };

/* "123.4 MiB": sizes for people; --json has the bytes. */
static void human_size(uint64_t bytes, char *out, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	size_t u = 0;
	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	snprintf(out, len, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
}

static void iso_time(int64_t when, char *out, size_t len)
{
	struct tm tm;
	time_t t = (time_t)when;
	if (gmtime_r(&t, &tm) == NULL || strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(out, len, "-");
}

static void print_header(int ref_width)
{
	printf("%-*s  %-19s  %10s  %s\n", ref_width, "REF", "DIGEST", "SIZE", "LAST USED");
}

/* One image as a table row: the digest cut to sha256:<12 hex> (what
 * `image rm` and `vm run --image` also take). */
static void print_row(int ref_width, const char *ref, const char *digest, uint64_t size, int64_t last_used)
{
	char sz[32], when[32];
	human_size(size, sz, sizeof(sz));
	iso_time(last_used, when, sizeof(when));
	printf("%-*s  %.19s  %10s  %s\n", ref_width, ref, digest, sz, when);
}

static json_t *info_json(const char *ref, const char *digest, uint64_t size, int64_t last_used, const char *path)
{
	char when[32];
	iso_time(last_used, when, sizeof(when));
	return json_pack("{s:s, s:s, s:I, s:s, s:s?}", "ref", ref, "digest", digest, "size", (json_int_t)size,
			 "last_used", when, "path", path);
}

static int print_info(const struct sbx_image_info *info, enum ls_format format)
{
	int64_t now = (int64_t)time(NULL);
	if (format == LS_JSON) {
		json_t *o = info_json(info->ref, info->digest, info->size, now, info->path);
		int rc = o != NULL ? json_dumpf(o, stdout, JSON_COMPACT) : -1;
		json_decref(o);
		printf("\n");
		return rc;
	}
	int w = (int)strlen(info->ref);
	print_header(w < 3 ? 3 : w);
	print_row(w < 3 ? 3 : w, info->ref, info->digest, info->size, now);
	return 0;
}

/* One line naming the mistake, not the whole help. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("sandbox-libkrun image: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("; see `sandbox-libkrun image --help`\n", stderr);
	return 2;
}

static int fail(sbx_error_t *err)
{
	fprintf(stderr, "sandbox-libkrun image: %s\n", sbx_error_msg(*err));
	sbx_error_free(err);
	return 1;
}

static int cmd_pull(const char *name, const struct sbx_image_config *cfg, const struct sbx_image_cli_host *host,
		    bool template, enum ls_format format)
{
	const char *ref = sbx_image_catalog_ref(cfg, name);
	struct sbx_pull_progress progress = { .layer = on_layer };
	struct sbx_image_info info;
	sbx_error_t err = NULL;
	if (sbx_image_pull(ref ? ref : name, cfg, isatty(2) ? &progress : NULL, &info, &err) < 0)
		return fail(&err);
	print_info(&info, format);
	fflush(stdout);
	if (template && host->pulled != NULL)
		host->pulled(host->ud, name, info.ref);
	free(info.path);
	return 0;
}

static int cmd_import(const char *path, const char *ref, const struct sbx_image_config *cfg,
		      const struct sbx_image_cli_host *host, bool template, enum ls_format format)
{
	struct sbx_image_info info;
	sbx_error_t err = NULL;
	if (sbx_image_import(path, ref, &cfg->limits, &info, &err) < 0)
		return fail(&err);
	print_info(&info, format);
	fflush(stdout);
	if (template && host->pulled != NULL)
		host->pulled(host->ud, info.ref, info.ref);
	free(info.path);
	return 0;
}

static int ls_json(const char *root, const struct sbx_index *idx)
{
	json_t *a = json_array();
	for (size_t i = 0; a != NULL && i < idx->n; i++) {
		const struct sbx_index_entry *e = &idx->entries[i];
		sbx_error_t err = NULL;
		char *path = sbx_image_path(root, e->digest, &err);
		sbx_error_free(&err);
		if (json_array_append_new(a, info_json(e->ref, e->digest, e->size, e->last_used, path)) < 0) {
			json_decref(a);
			a = NULL;
		}
		free(path);
	}
	int rc = a != NULL ? json_dumpf(a, stdout, JSON_INDENT(2)) : -1;
	json_decref(a);
	printf("\n");
	return rc;
}

static int cmd_ls(enum ls_format format)
{
	sbx_error_t err = NULL;
	char *root = sbx_image_root(&err);
	struct sbx_index idx;
	if (root == NULL || sbx_index_read(root, &idx, &err) < 0) {
		free(root);
		return fail(&err);
	}
	int rc = 0;
	int w = 3;
	for (size_t i = 0; i < idx.n; i++)
		if ((int)strlen(idx.entries[i].ref) > w)
			w = (int)strlen(idx.entries[i].ref);
	if (format == LS_JSON) {
		rc = ls_json(root, &idx) < 0 ? 1 : 0;
	} else if (format == LS_QUIET) {
		for (size_t i = 0; i < idx.n; i++)
			printf("%s\n", idx.entries[i].ref);
	} else if (idx.n == 0) {
		printf("no image is cached (sandbox-libkrun image pull NAME, or image import PATH)\n");
	} else {
		print_header(w);
		for (size_t i = 0; i < idx.n; i++) {
			const struct sbx_index_entry *e = &idx.entries[i];
			print_row(w, e->ref, e->digest, e->size, e->last_used);
		}
	}
	if (rc != 0)
		fprintf(stderr, "sandbox-libkrun image: ls: out of memory\n");
	sbx_index_free(&idx);
	free(root);
	return rc;
}

static int cmd_rm(const char *name, const struct sbx_image_config *cfg)
{
	/* A catalog name stands for its reference, as in pull. */
	const char *catalog_ref = sbx_image_catalog_ref(cfg, name);
	const char *key = catalog_ref != NULL ? catalog_ref : name;
	sbx_error_t err = NULL;
	char *root = sbx_image_root(&err);
	if (root == NULL)
		return fail(&err);
	/* Collect the digests the key names before forgetting them. */
	struct sbx_index before = { 0 };
	size_t removed = 0;
	char digest[SBX_DIGEST_LEN + 1];
	const struct sbx_index_entry *short_digest = NULL;
	if (sbx_index_read(root, &before, &err) == 0 && strncmp(key, "sha256:", 7) == 0 && strlen(key) < SBX_DIGEST_LEN &&
	    (short_digest = sbx_image_lookup(&before, cfg, key, &err)) != NULL) {
		/* `image ls` shows digests cut short: the full one is the key. */
		memcpy(digest, short_digest->digest, sizeof(digest));
		key = digest;
	}
	if (err != NULL || sbx_index_remove(root, key, &removed, &err) < 0) {
		sbx_index_free(&before);
		free(root);
		return fail(&err);
	}
	int rc = 0;
	for (size_t i = 0; i < before.n; i++) {
		const struct sbx_index_entry *e = &before.entries[i];
		if (strcmp(e->ref, key) != 0 && strcmp(e->digest, key) != 0)
			continue;
		if (sbx_store_delete_unused(root, e->digest, &err) < 0) {
			fprintf(stderr, "sandbox-libkrun image: %s\n", sbx_error_msg(err));
			sbx_error_free(&err);
			rc = 1;
		}
	}
	sbx_index_free(&before);
	free(root);
	if (removed == 0) {
		fprintf(stderr, "sandbox-libkrun image: no image '%s'\n", key);
		return 1;
	}
	return rc;
}

int sbx_image_cli(int argc, char **argv, const struct sbx_image_cli_host *host)
{
	const char *config_path = NULL, *ref = NULL;
	bool template = true;
	enum ls_format format = LS_TABLE;
	const char *args[3];
	int nargs = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(usage_text, stdout);
			return 0;
		} else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
			config_path = argv[++i];
		} else if (strcmp(argv[i], "--ref") == 0 && i + 1 < argc) {
			ref = argv[++i];
		} else if (strcmp(argv[i], "--no-template") == 0) {
			template = false;
		} else if (strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "-q") == 0) {
			if (format != LS_TABLE)
				return usage_error("--json and -q: one of them");
			format = argv[i][1] == 'q' ? LS_QUIET : LS_JSON;
		} else if (argv[i][0] == '-') {
			return usage_error("unknown option '%s'", argv[i]);
		} else if (nargs == 3) {
			return usage_error("unexpected argument '%s'", argv[i]);
		} else {
			args[nargs++] = argv[i];
		}
	}
	if (nargs == 0)
		return usage_error("a command is required (pull, import, ls, rm)");
	const char *cmd = args[0];
	bool known = strcmp(cmd, "pull") == 0 || strcmp(cmd, "import") == 0 || strcmp(cmd, "ls") == 0 ||
		     strcmp(cmd, "rm") == 0;
	if (!known)
		return usage_error("unknown command '%s'", cmd);
	if (nargs != (strcmp(cmd, "ls") == 0 ? 1 : 2))
		return usage_error(nargs == 1 ? "%s needs an argument" : "%s: unexpected argument", cmd);
	if (format == LS_QUIET && strcmp(cmd, "ls") != 0)
		return usage_error("-q is for ls only");
	sbx_log_init_from_env();
	struct sbx_image_config cfg;
	sbx_image_config_init(&cfg);
	sbx_error_t err = NULL;
	if (sbx_log_format_from_env(&err) < 0) {
		fprintf(stderr, "sandbox-libkrun image: %s\n", sbx_error_msg(err));
		sbx_error_free(&err);
		return 2;
	}
	if (config_path != NULL && host->load(host->ud, config_path, &cfg, &err) < 0) {
		fail(&err);
		return 2;
	}
	int rc;
	if (strcmp(cmd, "pull") == 0)
		rc = cmd_pull(args[1], &cfg, host, template, format);
	else if (strcmp(cmd, "import") == 0)
		rc = cmd_import(args[1], ref, &cfg, host, template, format);
	else if (strcmp(cmd, "ls") == 0)
		rc = cmd_ls(format);
	else
		rc = cmd_rm(args[1], &cfg);
	sbx_image_config_free(&cfg);
	return rc;
}
