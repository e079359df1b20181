/* The worker VM's environment (see worker_env.h). */
#include "worker/worker_env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/image_runtime.h"
#include "adapter/sandbox/env.h"
#include "adapter/sandbox/sandbox_network.h"
#include "common/cleanup.h"
#include "common/cleanup_json.h"
#include "common/scodes.h"
#include "common/strv.h"

#define WORKER_ENV_MAX 4096 /* entries, whatever their source */

struct env_list {
	char **v;
	size_t n;
};

static bool same_name(const char *a, const char *b)
{
	size_t la = strcspn(a, "="), lb = strcspn(b, "=");
	return la == lb && memcmp(a, b, la) == 0;
}

/* Appends kv (taken), dropping an earlier entry of the same name. */
static int put(struct env_list *l, char *kv, sbx_error_t *err)
{
	if (kv == NULL)
		return sbx_error_errno(err, ENOMEM, "worker env");
	for (size_t i = 0; i < l->n; i++) {
		if (same_name(l->v[i], kv)) {
			free(l->v[i]);
			memmove(&l->v[i], &l->v[i + 1], (l->n - i) * sizeof(char *));
			l->n--;
			break;
		}
	}
	if (l->n >= WORKER_ENV_MAX) {
		free(kv);
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "the worker's environment has more than %u entries",
				       WORKER_ENV_MAX);
	}
	l->v[l->n++] = kv;
	l->v[l->n] = NULL;
	return 0;
}

static bool reserved(const char *kv)
{
	static const char *const names[] = { "III_ENGINE_URL=", "III_URL=", "III_WORKER_NAME=", "III_ISOLATION=" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (same_name(kv, names[i]))
			return true;
	}
	return false;
}

/* III_CONFIG=<host path> becomes the same file name in the shared dir. */
static char *repoint_config(const char *kv)
{
	const char *path = strchr(kv, '=') + 1;
	const char *base = strrchr(path, '/');
	base = base != NULL ? base + 1 : path;
	char *out = NULL;
	if (base[0] == '\0')
		return strdup("III_CONFIG=" WORKER_CONFIG_GUEST_DIR);
	return asprintf(&out, "III_CONFIG=%s/%s", WORKER_CONFIG_GUEST_DIR, base) < 0 ? NULL : out;
}

/* Appends each "K=V" of v (entries without '=' dropped, as the guest
 * would), rewritten for the guest's network. */
static int put_all(struct env_list *l, char *const *v, bool from_request, bool config_dir, sbx_error_t *err)
{
	for (size_t i = 0; v != NULL && v[i] != NULL; i++) {
		if (strchr(v[i], '=') == NULL || (from_request && reserved(v[i])))
			continue;
		char *kv = config_dir && same_name(v[i], "III_CONFIG=") ? repoint_config(v[i])
									  : sandbox_network_rewrite(v[i]);
		if (put(l, kv, err) < 0)
			return -1;
	}
	return 0;
}

static bool has(const struct env_list *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++) {
		if (same_name(l->v[i], name))
			return true;
	}
	return false;
}

static char *pair(const char *k, const char *v)
{
	char *out = NULL;
	return asprintf(&out, "%s=%s", k, v) < 0 ? NULL : out;
}

/* The request's env as "K=V" strings, NULL-terminated. */
static char **request_strv(json_t *req)
{
	size_t n = json_array_size(req);
	char **v = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; v != NULL && i < n; i++) {
		if ((v[i] = strdup(json_string_value(json_array_get(req, i)))) == NULL) {
			sbx_strv_free(v);
			return NULL;
		}
	}
	return v;
}

char **worker_env_build(const struct worker_env_in *in, sbx_error_t *err)
{
	cleanup_json json_t *req = env_resolve(in->request_env, err);
	if (req == NULL)
		return NULL;
	cleanup_strv char **req_v = request_strv(req);
	cleanup_free char *url = sandbox_network_rewrite(in->engine_url);
	struct env_list l = { calloc(WORKER_ENV_MAX + 1, sizeof(char *)), 0 };
	if (req_v == NULL || url == NULL || l.v == NULL) {
		sbx_strv_free(l.v);
		return sbx_error_errno(err, ENOMEM, "worker env"), NULL;
	}
	if (put_all(&l, in->image_env, false, false, err) < 0 || put_all(&l, in->manifest_env, false, false, err) < 0 ||
	    put_all(&l, req_v, true, in->config_dir, err) < 0 ||
	    (!has(&l, "PATH=") && put(&l, strdup(BOOT_ENV_DEFAULT_PATH), err) < 0) ||
	    put(&l, pair("III_ENGINE_URL", url), err) < 0 || put(&l, pair("III_URL", url), err) < 0 ||
	    put(&l, pair("III_WORKER_NAME", in->worker), err) < 0 || put(&l, strdup("III_ISOLATION=libkrun"), err) < 0) {
		sbx_strv_free(l.v);
		return NULL;
	}
	return l.v;
}
