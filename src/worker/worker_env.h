/* A worker VM's environment (contract §7.19 worker::start): the image's
 * Env, then the manifest's env, then the request's (a {K: V} map or a
 * ["K=V"] list), then the reserved keys nobody overrides: III_ENGINE_URL
 * and III_URL (the engine URL), III_WORKER_NAME, and III_ISOLATION=libkrun
 * last.  A later entry replaces an earlier one of the same name (and moves
 * to its place in the order).  Values are rewritten for the guest's
 * network (`://localhost:` and `://127.0.0.1:` become the gateway), and
 * with a shared config dir III_CONFIG is repointed to its file inside
 * WORKER_CONFIG_GUEST_DIR. */
#ifndef SBX_WORKER_WORKER_ENV_H
#define SBX_WORKER_WORKER_ENV_H

#include <jansson.h>
#include <stdbool.h>

#include "common/error.h"

#define WORKER_CONFIG_GUEST_DIR "/run/iii/config"

struct worker_env_in {
	char *const *image_env;    /* may be NULL */
	char *const *manifest_env; /* may be NULL */
	json_t *request_env;       /* the request's `env` (borrowed), NULL when absent */
	const char *engine_url;    /* as the host sees it (rewritten here) */
	const char *worker;
	bool config_dir;           /* a config dir is shared: repoint III_CONFIG */
};

/* A NULL-terminated "K=V" list (sbx_strv_free), or NULL with S001 for a bad
 * request env. */
char **worker_env_build(const struct worker_env_in *in, sbx_error_t *err);

#endif
