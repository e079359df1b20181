/* The worker VM's environment: layering, reserved keys, rewrites. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/strv.h"
#include "harness.h"
#include "worker/worker_env.h"

static const char *get(char **env, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; env[i] != NULL; i++) {
		if (strncmp(env[i], name, n) == 0 && env[i][n] == '=')
			return env[i] + n + 1;
	}
	return NULL;
}

TEST(layers_and_reserved_keys)
{
	char *image[] = { "PATH=/img/bin", "A=image", "B=image", NULL };
	char *manifest[] = { "B=manifest", "C=manifest", NULL };
	json_t *req = json_pack("{s:s, s:s, s:s, s:s}", "C", "request", "III_ISOLATION", "none", "III_URL",
				"ws://evil:1", "III_WORKER_NAME", "other");
	struct worker_env_in in = { image, manifest, req, "ws://127.0.0.1:49134", "w1", false };
	sbx_error_t err = NULL;
	char **env = worker_env_build(&in, &err);
	CHECK(env != NULL);
	CHECK_STR(get(env, "PATH"), "/img/bin");
	CHECK_STR(get(env, "A"), "image");
	CHECK_STR(get(env, "B"), "manifest");
	CHECK_STR(get(env, "C"), "request");
	CHECK_STR(get(env, "III_URL"), "ws://10.0.2.2:49134");
	CHECK_STR(get(env, "III_ENGINE_URL"), "ws://10.0.2.2:49134");
	CHECK_STR(get(env, "III_WORKER_NAME"), "w1");
	size_t n = sbx_strv_len(env);
	CHECK_STR(env[n - 1], "III_ISOLATION=libkrun");
	/* Each name once. */
	int iso = 0;
	for (size_t i = 0; i < n; i++)
		iso += strncmp(env[i], "III_ISOLATION=", 14) == 0;
	CHECK_INT(iso, 1);
	sbx_strv_free(env);
	json_decref(req);
}

TEST(list_env_rewrite_and_config)
{
	json_t *req = json_pack("[s, s, s]", "DB=postgres://localhost:5432/x", "III_CONFIG=/home/u/proj/.iii/cfg/w.yaml",
				"NOEQUALS");
	struct worker_env_in in = { NULL, NULL, req, "ws://localhost:7000", "w2", true };
	sbx_error_t err = NULL;
	char **env = worker_env_build(&in, &err);
	CHECK(env != NULL);
	CHECK_STR(get(env, "DB"), "postgres://10.0.2.2:5432/x");
	CHECK_STR(get(env, "III_CONFIG"), "/run/iii/config/w.yaml");
	CHECK_STR(get(env, "III_URL"), "ws://10.0.2.2:7000");
	CHECK(get(env, "PATH") != NULL);
	CHECK(get(env, "NOEQUALS") == NULL);
	sbx_strv_free(env);
	json_decref(req);
	/* Without a shared config dir, III_CONFIG is left as given. */
	req = json_pack("[s]", "III_CONFIG=/x/y.yaml");
	in = (struct worker_env_in){ NULL, NULL, req, "ws://h:1", "w", false };
	env = worker_env_build(&in, &err);
	CHECK(env != NULL);
	CHECK_STR(get(env, "III_CONFIG"), "/x/y.yaml");
	sbx_strv_free(env);
	json_decref(req);
}

TEST(bad_map_key_is_s001)
{
	json_t *req = json_pack("{s:s}", "BAD-KEY", "x");
	struct worker_env_in in = { NULL, NULL, req, "ws://h:1", "w", false };
	sbx_error_t err = NULL;
	CHECK(worker_env_build(&in, &err) == NULL);
	CHECK_STR(err->scode, "S001");
	sbx_error_free(&err);
	json_decref(req);
}
