#include "adapter/sandbox/env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/quote.h"
#include "adapter/request.h"
#include "adapter/scode.h"
#include "common/cleanup.h"
#include "common/cleanup_json.h"
#include "common/scodes.h"

static bool all_strings(json_t *v)
{
	if (json_is_array(v)) {
		size_t i;
		json_t *item;
		json_array_foreach(v, i, item) {
			if (!json_is_string(item))
				return false;
		}
		return true;
	}
	const char *k;
	json_t *item;
	json_object_foreach(v, k, item) {
		if (!json_is_string(item))
			return false;
	}
	return true;
}

/* Entries reach the guest as C strings; keys cannot hold a NUL (jansson
 * refuses to decode one). */
static int check_nul(json_t *v, const char *field, sbx_error_t *err)
{
	size_t i;
	const char *k;
	json_t *item;
	if (json_is_array(v)) {
		json_array_foreach(v, i, item) {
			if (req_check_nul(item, field, err) < 0)
				return -1;
		}
		return 0;
	}
	json_object_foreach(v, k, item) {
		if (req_check_nul(item, field, err) < 0)
			return -1;
	}
	return 0;
}

int env_decode(json_t *req, const char *field, json_t **out, sbx_error_t *err)
{
	json_t *v = json_object_get(req, field);
	*out = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!(json_is_array(v) || json_is_object(v)) || !all_strings(v))
		return sbx_error_scode(err, SBX_SCODE_DECODE,
				       "data did not match any variant of untagged enum EnvShape for field `%s` "
				       "(expected a list of \"K=V\" strings or a map of strings)",
				       field);
	if (check_nul(v, field, err) < 0)
		return -1;
	*out = v;
	return 0;
}

bool env_name_is_valid(const char *name)
{
	if (!((name[0] >= 'A' && name[0] <= 'Z') || (name[0] >= 'a' && name[0] <= 'z') || name[0] == '_'))
		return false;
	for (const char *p = name + 1; *p != '\0'; p++) {
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
			return false;
	}
	return true;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

json_t *env_resolve(json_t *env, sbx_error_t *err)
{
	if (env == NULL)
		return json_array();
	if (json_is_array(env))
		return json_deep_copy(env);

	size_t n = json_object_size(env);
	cleanup_free const char **keys = calloc(n + 1, sizeof(*keys));
	if (keys == NULL)
		return sbx_error_errno(err, ENOMEM, "env"), NULL;
	size_t i = 0;
	const char *k;
	json_t *v;
	json_object_foreach(env, k, v) {
		keys[i++] = k;
	}
	qsort(keys, n, sizeof(*keys), cmp_str);

	cleanup_json json_t *out = json_array();
	cleanup_json json_t *bad = json_array();
	for (i = 0; out != NULL && bad != NULL && i < n; i++) {
		if (!env_name_is_valid(keys[i])) {
			if (json_array_append_new(bad, json_string(keys[i])) < 0)
				break;
			continue;
		}
		char *kv = NULL;
		if (asprintf(&kv, "%s=%s", keys[i], json_string_value(json_object_get(env, keys[i]))) < 0)
			break;
		int rc = json_array_append_new(out, json_string(kv));
		free(kv);
		if (rc < 0)
			break;
	}
	if (out == NULL || bad == NULL || i < n)
		return sbx_error_errno(err, ENOMEM, "env"), NULL;
	if (json_array_size(bad) > 0) {
		cleanup_free char *list = sbx_quote_list(bad);
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST,
				       "env contains invalid variable name(s): %s. Names must match "
				       "`[A-Za-z_][A-Za-z0-9_]*`.",
				       list != NULL ? list : "[...]"), NULL;
	}
	return sbx_steal_ptr(out);
}
