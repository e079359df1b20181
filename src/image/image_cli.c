#include "image/image_cli.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "image/image_import.h"
#include "image/image_index.h"
#include "image/image_pull.h"
#include "image/image_store.h"

static const char usage_text[] =
	"usage: sandbox-libkrun image [--config FILE] COMMAND\n"
	"  pull NAME|REF [--no-template]\n"
	"                           pull an image (catalog name or OCI ref) into the cache and\n"
	"                           make its VM template (booted once at default_cpus and\n"
	"                           default_memory_mb), so the daemon's first create of it\n"
	"                           restores; --no-template skips that\n"
	"  import PATH [--ref REF] [--no-template]\n"
	"                           load an OCI layout directory or a docker save archive (and\n"
	"                           make its VM template, as pull does)\n"
	"  ls                       list cached images: ref, digest, size, last used\n"
	"  rm NAME|REF|DIGEST       forget an image and delete its disk if unused\n"
	"--config FILE: the adapter's configuration (JSON or YAML, as serve --config), checked as\n"
	"serve checks it; the image commands use registry_mirrors, registry_auth, custom_images,\n"
	"auto_install, image_max_entries, image_max_mb and image_max_blob_mb; pull's template\n"
	"also the VM's keys (default_cpus, default_memory_mb, accel, scratch_disk_mb,\n"
	"krunfw_path, jail, ...): give it the daemon's file so they match.\n"
	"Output is tab-separated; layer progress is shown only on a terminal, the template's\n"
	"two lines (or its warning) always on stderr.\n";

static void on_layer(void *ud, size_t index, size_t count, const char *digest, uint64_t done, uint64_t total)
{
	fprintf(stderr, "\r[%zu/%zu] %.19s  %6.1f / %6.1f MB", index + 1, count, digest, (double)done / 1e6,
		(double)total / 1e6);
	if (done == total && total != 0)
		fputc('\n', stderr);
	fflush(stderr);
}

static void print_info(const struct sbx_image_info *info)
{
	printf("%s\t%s\t%llu\t%s\n", info->ref, info->digest, (unsigned long long)info->size, info->path);
}

static int fail(sbx_error_t *err)
{
	fprintf(stderr, "sandbox-libkrun image: %s\n", sbx_error_msg(*err));
	sbx_error_free(err);
	return 1;
}

static int cmd_pull(const char *name, const struct sbx_image_config *cfg, const struct sbx_image_cli_host *host,
		    bool template)
{
	const char *ref = sbx_image_catalog_ref(cfg, name);
	struct sbx_pull_progress progress = { .layer = on_layer };
	struct sbx_image_info info;
	sbx_error_t err = NULL;
	if (sbx_image_pull(ref ? ref : name, cfg, isatty(2) ? &progress : NULL, &info, &err) < 0)
		return fail(&err);
	print_info(&info);
	fflush(stdout);
	if (template && host->pulled != NULL)
		host->pulled(host->ud, name, info.ref);
	free(info.path);
	return 0;
}

static int cmd_import(const char *path, const char *ref, const struct sbx_image_config *cfg,
		      const struct sbx_image_cli_host *host, bool template)
{
	struct sbx_image_info info;
	sbx_error_t err = NULL;
	if (sbx_image_import(path, ref, &cfg->limits, &info, &err) < 0)
		return fail(&err);
	print_info(&info);
	fflush(stdout);
	if (template && host->pulled != NULL)
		host->pulled(host->ud, info.ref, info.ref);
	free(info.path);
	return 0;
}

static int cmd_ls(void)
{
	sbx_error_t err = NULL;
	char *root = sbx_image_root(&err);
	struct sbx_index idx;
	if (root == NULL || sbx_index_read(root, &idx, &err) < 0) {
		free(root);
		return fail(&err);
	}
	if (isatty(1))
		printf("REF\tDIGEST\tSIZE\tLAST_USED\n");
	for (size_t i = 0; i < idx.n; i++) {
		const struct sbx_index_entry *e = &idx.entries[i];
		char when[32];
		struct tm tm;
		time_t t = (time_t)e->last_used;
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
		printf("%s\t%s\t%llu\t%s\n", e->ref, e->digest, (unsigned long long)e->size, when);
	}
	sbx_index_free(&idx);
	free(root);
	return 0;
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
	if (sbx_index_read(root, &before, &err) < 0 || sbx_index_remove(root, key, &removed, &err) < 0) {
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
		} else if (argv[i][0] == '-' || nargs == 3) {
			fputs(usage_text, stderr);
			return 2;
		} else {
			args[nargs++] = argv[i];
		}
	}
	if (nargs == 0) {
		fputs(usage_text, stderr);
		return 2;
	}
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
	int rc = 2;
	const char *cmd = args[0];
	if (strcmp(cmd, "pull") == 0 && nargs == 2)
		rc = cmd_pull(args[1], &cfg, host, template);
	else if (strcmp(cmd, "import") == 0 && nargs == 2)
		rc = cmd_import(args[1], ref, &cfg, host, template);
	else if (strcmp(cmd, "ls") == 0 && nargs == 1)
		rc = cmd_ls();
	else if (strcmp(cmd, "rm") == 0 && nargs == 2)
		rc = cmd_rm(args[1], &cfg);
	else
		fputs(usage_text, stderr);
	sbx_image_config_free(&cfg);
	return rc;
}
