/* ensure(): the S-codes the sandbox code relies on, without a registry. */
#include "harness.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

#include "image/image_config.h"
#include "image/image_pull.h"

static char state_dir[] = "/tmp/sbx-ensure-XXXXXX";

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

static void remove_state(void)
{
	nftw(state_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* One fresh state directory per test, all removed at exit. */
static void use_temp_state(void)
{
	static int n;
	char sub[64];
	if (n == 0) {
		if (mkdtemp(state_dir) == NULL)
			abort();
		atexit(remove_state);
	}
	snprintf(sub, sizeof(sub), "%s/%d", state_dir, n++);
	setenv("III_SANDBOX_STATE_DIR", sub, 1);
}

TEST(miss_without_auto_install_is_s101)
{
	use_temp_state();
	struct sbx_image_config cfg;
	sbx_image_config_init(&cfg);
	cfg.auto_install = false;
	sbx_error_t err = NULL;
	char *path = sbx_image_ensure("python", "docker.io/iiidev/python:latest", &cfg, &err);
	CHECK(path == NULL);
	CHECK_STR(err->scode, "S101");
	CHECK(strstr(sbx_error_msg(err), "image 'python'") != NULL);
	CHECK(strstr(sbx_error_msg(err), "sandbox-libkrun image pull docker.io/iiidev/python:latest") != NULL);
	CHECK(strstr(sbx_error_msg(err), "image import") != NULL);
	sbx_error_free(&err);
}

TEST(pull_failure_is_s102)
{
	use_temp_state();
	struct sbx_image_config cfg;
	sbx_image_config_init(&cfg);
	const char *json = "{\"auto_install\": true, \"registry_mirrors\": {\"docker.io\": \"http://127.0.0.1:1\"}}";
	sbx_error_t err = NULL;
	CHECK(sbx_image_config_from_json(&cfg, json, strlen(json), &err) == 0);
	char *path = sbx_image_ensure("node", "docker.io/iiidev/node:latest", &cfg, &err);
	CHECK(path == NULL);
	CHECK_STR(err->scode, "S102");
	CHECK(strncmp(sbx_error_msg(err), "auto-install failed for image 'node': ", 38) == 0);
	sbx_error_free(&err);
	sbx_image_config_free(&cfg);
}

TEST(bad_catalog_ref_is_s102)
{
	use_temp_state();
	struct sbx_image_config cfg;
	sbx_image_config_init(&cfg);
	sbx_error_t err = NULL;
	CHECK(sbx_image_ensure("x", "NOT A REF", &cfg, &err) == NULL);
	CHECK_STR(err->scode, "S102");
	sbx_error_free(&err);
}

TEST(config_rejects_wrong_types)
{
	struct sbx_image_config cfg;
	sbx_image_config_init(&cfg);
	sbx_error_t err = NULL;
	const char *bad = "[{\"auto_install\": \"yes\"}]";
	CHECK(sbx_image_config_from_json(&cfg, bad, strlen(bad), &err) < 0);
	sbx_error_free(&err);
	const char *secret = "{\"registry_auth\": {\"h\": {\"username\": \"u\", \"password\": 7}}}";
	CHECK(sbx_image_config_from_json(&cfg, secret, strlen(secret), &err) < 0);
	CHECK(strstr(sbx_error_msg(err), "7") == NULL);
	sbx_error_free(&err);
	sbx_image_config_free(&cfg);
	const char *good = "[{\"custom_images\": {\"pg\": \"postgres:17\"}}]";
	CHECK(sbx_image_config_from_json(&cfg, good, strlen(good), &err) == 0);
	CHECK_STR(sbx_image_catalog_ref(&cfg, "pg"), "postgres:17");
	CHECK_STR(sbx_image_catalog_ref(&cfg, "python"), "docker.io/iiidev/python:latest");
	CHECK(sbx_image_catalog_ref(&cfg, "nope") == NULL);
	sbx_image_config_free(&cfg);
}
