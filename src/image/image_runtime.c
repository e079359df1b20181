#include "image/image_runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/scodes.h"
#include "proto/proto.h"

void boot_env_free(char **env)
{
	for (size_t i = 0; env != NULL && env[i] != NULL; i++)
		free(env[i]);
	free(env);
}

void image_runtime_free(struct image_runtime *rt)
{
	boot_env_free(rt->env);
	free(rt->workdir);
	free(rt->user);
	rt->env = NULL;
	rt->workdir = NULL;
	rt->user = NULL;
}

struct env_list {
	char **v;
	size_t n;
};

/* Adds or replaces (same name) one entry; entries without '=' or with an
 * empty name are skipped. */
static int env_put(struct env_list *l, const char *kv, sbx_error_t *err)
{
	const char *eq = strchr(kv, '=');
	if (eq == NULL || eq == kv)
		return 0;
	size_t klen = (size_t)(eq - kv) + 1;
	if (strlen(kv) > BOOT_ENV_MAX_ENTRY)
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "env entry %.*s is longer than %u bytes", (int)(klen - 1), kv,
				       BOOT_ENV_MAX_ENTRY);
	char *copy = strdup(kv);
	if (copy == NULL)
		return sbx_error_errno(err, ENOMEM, "environment");
	for (size_t i = 0; i < l->n; i++) {
		if (strncmp(l->v[i], kv, klen) == 0) {
			free(l->v[i]);
			l->v[i] = copy;
			return 0;
		}
	}
	if (l->n >= BOOT_ENV_MAX_ENTRIES) {
		free(copy);
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "more than %u environment entries", BOOT_ENV_MAX_ENTRIES);
	}
	char **v = realloc(l->v, (l->n + 2) * sizeof(*v));
	if (v == NULL) {
		free(copy);
		return sbx_error_errno(err, ENOMEM, "environment");
	}
	l->v = v;
	l->v[l->n++] = copy;
	l->v[l->n] = NULL;
	return 0;
}

static bool env_has(const struct env_list *l, const char *name)
{
	size_t k = strlen(name);
	for (size_t i = 0; i < l->n; i++) {
		if (strncmp(l->v[i], name, k) == 0 && l->v[i][k] == '=')
			return true;
	}
	return false;
}

char **boot_env_layer(char *const *image_env, json_t *over, sbx_error_t *err)
{
	struct env_list l = { 0 };
	size_t i;
	json_t *e;
	for (i = 0; image_env != NULL && image_env[i] != NULL; i++) {
		if (env_put(&l, image_env[i], err) < 0)
			goto fail;
	}
	json_array_foreach(over, i, e) {
		if (json_is_string(e) && env_put(&l, json_string_value(e), err) < 0)
			goto fail;
	}
	if (!env_has(&l, "PATH") && env_put(&l, BOOT_ENV_DEFAULT_PATH, err) < 0)
		goto fail;
	if (l.v == NULL && (l.v = calloc(1, sizeof(char *))) == NULL) {
		sbx_error_errno(err, ENOMEM, "environment");
		goto fail;
	}
	return l.v;
fail:
	boot_env_free(l.v);
	return NULL;
}

int image_runtime_parse(const char *json, size_t len, struct image_runtime *rt, sbx_error_t *err)
{
	*rt = (struct image_runtime){ 0 };
	json_error_t jerr;
	json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL)
		return sbx_error_set(err, EINVAL, "image config: %s", jerr.text);
	struct env_list l = { 0 };
	json_t *cfg = json_object_get(root, "config");
	json_t *env = json_object_get(cfg, "Env");
	json_t *wd = json_object_get(cfg, "WorkingDir");
	json_t *user = json_object_get(cfg, "User");
	size_t i;
	json_t *e;
	if ((env != NULL && !json_is_array(env) && !json_is_null(env)) ||
	    (wd != NULL && !json_is_string(wd) && !json_is_null(wd)) ||
	    (user != NULL && !json_is_string(user) && !json_is_null(user))) {
		sbx_error_set(err, EINVAL, "image config: Env must be a list, WorkingDir and User strings");
		goto fail;
	}
	/* The guest checks the form; here only what the wire cannot carry
	 * (jansson already refuses a NUL inside a string). */
	if (json_is_string(user) && json_string_length(user) > PROTO_MAX_USER) {
		sbx_error_set(err, EINVAL, "image config: User is longer than %u bytes", PROTO_MAX_USER);
		goto fail;
	}
	json_array_foreach(env, i, e) {
		if (!json_is_string(e)) {
			sbx_error_set(err, EINVAL, "image config: Env entry %zu is not a string", i);
			goto fail;
		}
		if (env_put(&l, json_string_value(e), err) < 0)
			goto fail;
	}
	if (l.v == NULL && (l.v = calloc(1, sizeof(char *))) == NULL) {
		sbx_error_errno(err, ENOMEM, "image config");
		goto fail;
	}
	/* A relative WorkingDir has no meaning without a base: ignore it. */
	if (json_is_string(wd) && json_string_value(wd)[0] == '/' &&
	    (rt->workdir = strdup(json_string_value(wd))) == NULL) {
		sbx_error_errno(err, ENOMEM, "image config");
		goto fail;
	}
	if (json_is_string(user) && json_string_value(user)[0] != '\0' &&
	    (rt->user = strdup(json_string_value(user))) == NULL) {
		sbx_error_errno(err, ENOMEM, "image config");
		goto fail;
	}
	rt->env = l.v;
	json_decref(root);
	return 0;
fail:
	boot_env_free(l.v);
	free(rt->workdir);
	rt->workdir = NULL;
	json_decref(root);
	return -1;
}

int image_runtime_load(const char *erofs_path, struct image_runtime *rt, sbx_error_t *err)
{
	*rt = (struct image_runtime){ 0 };
	size_t plen = strlen(erofs_path);
	if (plen < 6 || strcmp(erofs_path + plen - 6, ".erofs") != 0)
		return sbx_error_set(err, EINVAL, "%s is not an .erofs image path", erofs_path);
	cleanup_free char *path = NULL;
	if (asprintf(&path, "%.*s.config.json", (int)(plen - 6), erofs_path) < 0)
		return sbx_error_errno(err, ENOMEM, "image config path");
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT)
		return image_runtime_parse("{}", 2, rt, err);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return sbx_error_errno(err, errno, "open %s", path);
	if (!S_ISREG(st.st_mode) || st.st_size > IMAGE_CONFIG_MAX_BYTES)
		return sbx_error_set(err, EFBIG, "%s: not a regular file of at most %u bytes", path,
				     IMAGE_CONFIG_MAX_BYTES);
	cleanup_free char *buf = malloc((size_t)st.st_size + 1);
	if (buf == NULL)
		return sbx_error_errno(err, ENOMEM, "image config");
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return sbx_error_errno(err, n < 0 ? errno : EIO, "read %s", path);
		got += (size_t)n;
	}
	return image_runtime_parse(buf, got, rt, err);
}
