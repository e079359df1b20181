#include "worker/worker_manifest.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/cleanup_json.h"
#include "common/scodes.h"
#include "common/strv.h"
#include "image/image_config.h"
#include "common/yaml_json.h"

#define M WORKER_MANIFEST_FILE ": "

/* Keys whose content is someone else's business. */
static const char *const ignored[] = { "iii", "deploy", "manifest", "tags", "dependencies", NULL };

#define refuse(err, ...) sbx_error_scode(err, SBX_S_MANIFEST, M __VA_ARGS__)

/* A string, or null or missing (absent). */
static int opt_string(json_t *v, const char *key, char **out, sbx_error_t *err)
{
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return refuse(err, "`%s` must be a string, not %s", key, sbx_config_json_kind(v));
	*out = strdup(json_string_value(v));
	return *out != NULL ? 0 : sbx_error_errno(err, ENOMEM, "manifest");
}

/* A map (or null) whose keys are all in `known`; calls nothing itself. */
static int sub_map(json_t *v, const char *key, const char *const *known, sbx_error_t *err)
{
	if (json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return refuse(err, "`%s` must be a map, not %s", key, sbx_config_json_kind(v));
	const char *k;
	json_t *x;
	json_object_foreach (v, k, x) {
		bool found = false;
		for (size_t i = 0; known[i] != NULL && !found; i++)
			found = strcmp(k, known[i]) == 0;
		if (!found) {
			char full[256];
			snprintf(full, sizeof(full), "%s.%.200s", key, k);
			return refuse(err, "unknown key `%s`", full);
		}
	}
	return 0;
}

static int field(json_t *map, const char *key, const char *sub, char **out, sbx_error_t *err)
{
	char full[64];
	snprintf(full, sizeof(full), "%s.%s", key, sub);
	return opt_string(json_object_get(map, sub), full, out, err);
}

static bool env_name_ok(const char *k)
{
	if (!((k[0] >= 'A' && k[0] <= 'Z') || (k[0] >= 'a' && k[0] <= 'z') || k[0] == '_'))
		return false;
	for (const char *p = k + 1; *p != '\0'; p++) {
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
			return false;
	}
	return true;
}

/* env: a map of scalars (kept as written, see yaml_to_json's text_keys). */
static int env(json_t *v, char ***out, sbx_error_t *err)
{
	if (json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return refuse(err, "`%s` must be a map of names to values, not %s", "env", sbx_config_json_kind(v));
	char **e = calloc(json_object_size(v) + 1, sizeof(*e));
	if (e == NULL)
		return sbx_error_errno(err, ENOMEM, "manifest env");
	size_t n = 0;
	const char *k;
	json_t *x;
	json_object_foreach (v, k, x) {
		char full[256];
		snprintf(full, sizeof(full), "env.%.200s", k);
		int rc = 0;
		if (!env_name_ok(k))
			rc = refuse(err, "`%s` is not a valid variable name", full);
		else if (!json_is_string(x))
			rc = refuse(err, "`%s` must be a scalar, not %s", full, sbx_config_json_kind(x));
		else if (asprintf(&e[n], "%s=%s", k, json_string_value(x)) < 0)
			rc = sbx_error_errno(err, ENOMEM, "manifest env");
		else
			n++;
		if (rc < 0) {
			e[n] = NULL;
			sbx_strv_free(e);
			return -1;
		}
	}
	sbx_strv_free(*out);
	*out = e;
	return 0;
}

static int resources(json_t *v, struct worker_resources *out, sbx_error_t *err)
{
	if (json_is_null(v))
		return 0;
	if (worker_resources_parse(v, "resources", true, out, err) < 0) {
		sbx_error_prefix(err, WORKER_MANIFEST_FILE);
		sbx_error_default_scode(err, SBX_S_MANIFEST);
		return -1;
	}
	return 0;
}

/* A bundle brings its files ready to run on the request's image. */
static int bundle_rules(const struct worker_manifest *m, sbx_error_t *err)
{
	const char *key = m->setup != NULL     ? "scripts.setup"
			  : m->install != NULL  ? "scripts.install"
			  : m->base_image != NULL ? "runtime.base_image"
						  : NULL;
	if (key != NULL)
		return refuse(err, "`%s` is not allowed in a bundle (package://) manifest", key);
	return 0;
}

static int top_key(const char *k, json_t *v, struct worker_manifest *m, sbx_error_t *err)
{
	static const char *const runtime_keys[] = { "base_image", NULL };
	static const char *const script_keys[] = { "setup", "install", "start", NULL };
	for (size_t i = 0; ignored[i] != NULL; i++) {
		if (strcmp(k, ignored[i]) == 0)
			return 0;
	}
	if (strcmp(k, "name") == 0)
		return opt_string(v, "name", &m->name, err);
	if (strcmp(k, "description") == 0)
		return opt_string(v, "description", &m->description, err);
	if (strcmp(k, "runtime") == 0)
		return sub_map(v, "runtime", runtime_keys, err) < 0 ? -1
								: field(v, "runtime", "base_image", &m->base_image, err);
	if (strcmp(k, "scripts") == 0)
		return sub_map(v, "scripts", script_keys, err) < 0 || field(v, "scripts", "setup", &m->setup, err) < 0 ||
				       field(v, "scripts", "install", &m->install, err) < 0 ||
				       field(v, "scripts", "start", &m->start, err) < 0
			       ? -1
			       : 0;
	if (strcmp(k, "env") == 0)
		return env(v, &m->env, err);
	if (strcmp(k, "resources") == 0)
		return resources(v, &m->resources, err);
	char shown[256];
	snprintf(shown, sizeof(shown), "%.200s", k);
	return refuse(err, "unknown key `%s`", shown);
}

int worker_manifest_parse(const char *text, size_t len, bool bundle, struct worker_manifest *out, sbx_error_t *err)
{
	memset(out, 0, sizeof(*out));
	if (len > WORKER_MANIFEST_MAX)
		return sbx_error_scode(err, SBX_S_MANIFEST, M "larger than %d KiB", WORKER_MANIFEST_MAX / 1024);
	static const char *const text_keys[] = { "env", NULL };
	cleanup_json json_t *root = yaml_to_json(text, len, text_keys, err);
	if (root == NULL) {
		sbx_error_prefix(err, WORKER_MANIFEST_FILE);
		sbx_error_default_scode(err, SBX_S_MANIFEST);
		return -1;
	}
	if (!json_is_object(root))
		return refuse(err, "the top level must be a map, not %s", sbx_config_json_kind(root));
	const char *k;
	json_t *v;
	json_object_foreach (root, k, v) {
		if (top_key(k, v, out, err) < 0)
			goto fail;
	}
	if (out->env == NULL && (out->env = calloc(1, sizeof(*out->env))) == NULL) {
		sbx_error_errno(err, ENOMEM, "manifest");
		goto fail;
	}
	if (bundle && bundle_rules(out, err) < 0)
		goto fail;
	return 0;
fail:
	worker_manifest_free(out);
	return -1;
}

int worker_manifest_load(int dfd, const char *dir, bool bundle, struct worker_manifest *out, sbx_error_t *err)
{
	memset(out, 0, sizeof(*out));
	/* Not a symlink (it could point anywhere, outside both roots), not a
	 * FIFO that would block the open. */
	cleanup_close int fd = openat(dfd, WORKER_MANIFEST_FILE, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0 && errno == ENOENT)
		return sbx_error_scode(err, SBX_S_MANIFEST, M "not found in %s", dir);
	if (fd < 0 && errno == ELOOP)
		return sbx_error_scode(err, SBX_S_MANIFEST, M "is a symlink; it must be a regular file");
	if (fd < 0)
		return sbx_error_errno(err, errno, "open %s/" WORKER_MANIFEST_FILE, dir);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return sbx_error_errno(err, errno, "stat %s/" WORKER_MANIFEST_FILE, dir);
	if (!S_ISREG(st.st_mode))
		return sbx_error_scode(err, SBX_S_MANIFEST, M "not a regular file");
	char *buf = malloc(WORKER_MANIFEST_MAX + 1);
	if (buf == NULL)
		return sbx_error_errno(err, ENOMEM, "manifest");
	size_t len = 0;
	for (;;) {
		ssize_t n = read(fd, buf + len, WORKER_MANIFEST_MAX + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			return sbx_error_errno(err, errno, "read %s/" WORKER_MANIFEST_FILE, dir);
		}
		len += (size_t)n;
		if (n == 0 || len > WORKER_MANIFEST_MAX)
			break;
	}
	int rc = worker_manifest_parse(buf, len, bundle, out, err);
	free(buf);
	return rc;
}

void worker_manifest_free(struct worker_manifest *m)
{
	free(m->name);
	free(m->description);
	free(m->base_image);
	free(m->setup);
	free(m->install);
	free(m->start);
	sbx_strv_free(m->env);
	memset(m, 0, sizeof(*m));
}
