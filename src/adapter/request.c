#include "adapter/request.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "adapter/scode.h"
#include "common/cleanup.h"
#include "common/scodes.h"

int req_object(json_t *req, sbx_error_t *err)
{
	if (json_is_object(req))
		return 0;
	return req_type_error(req, NULL, "a JSON object", err);
}

/* Describes an unexpected value the way serde's `invalid type` does. */
static char *describe(json_t *v)
{
	char *s = NULL;
	int rc;
	switch (json_typeof(v)) {
	case JSON_NULL: rc = asprintf(&s, "null"); break;
	case JSON_TRUE: rc = asprintf(&s, "boolean `true`"); break;
	case JSON_FALSE: rc = asprintf(&s, "boolean `false`"); break;
	case JSON_INTEGER: rc = asprintf(&s, "integer `%" JSON_INTEGER_FORMAT "`", json_integer_value(v)); break;
	case JSON_REAL: rc = asprintf(&s, "floating point `%g`", json_real_value(v)); break;
	case JSON_STRING: rc = asprintf(&s, "string"); break;
	case JSON_ARRAY: rc = asprintf(&s, "sequence"); break;
	default: rc = asprintf(&s, "map"); break;
	}
	return rc < 0 ? NULL : s;
}

int req_type_error(json_t *v, const char *field, const char *expected, sbx_error_t *err)
{
	cleanup_free char *what = v != NULL ? describe(v) : NULL;
	if (field != NULL)
		return sbx_error_scode(err, SBX_SCODE_DECODE, "invalid type: %s, expected %s for field `%s`",
				       what != NULL ? what : "value", expected, field);
	return sbx_error_scode(err, SBX_SCODE_DECODE, "invalid type: %s, expected %s", what != NULL ? what : "value",
			       expected);
}

static int missing(const char *field, sbx_error_t *err)
{
	return sbx_error_scode(err, SBX_SCODE_DECODE, "missing field `%s`", field);
}

/* The field's value, or NULL when absent or null. */
static json_t *get(json_t *req, const char *field)
{
	json_t *v = json_object_get(req, field);
	return json_is_null(v) ? NULL : v;
}

int req_check_nul(json_t *v, const char *field, sbx_error_t *err)
{
	if (memchr(json_string_value(v), '\0', json_string_length(v)) == NULL)
		return 0;
	return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "%s contains a NUL byte", field);
}

int req_bytes(json_t *req, const char *field, bool required, const char **out, size_t *len, sbx_error_t *err)
{
	json_t *v = json_object_get(req, field);
	*out = NULL;
	*len = 0;
	if (v == NULL || (json_is_null(v) && !required))
		return required ? missing(field, err) : 0;
	if (!json_is_string(v))
		return req_type_error(v, field, "a string", err);
	*out = json_string_value(v);
	*len = json_string_length(v);
	return 0;
}

int req_string(json_t *req, const char *field, bool required, const char **out, sbx_error_t *err)
{
	size_t len;
	if (req_bytes(req, field, required, out, &len, err) < 0)
		return -1;
	if (*out != NULL && req_check_nul(json_object_get(req, field), field, err) < 0) {
		*out = NULL;
		return -1;
	}
	return 0;
}

int req_bool(json_t *req, const char *field, bool def, bool *out, sbx_error_t *err)
{
	json_t *v = get(req, field);
	*out = def;
	if (v == NULL)
		return 0;
	if (!json_is_boolean(v))
		return req_type_error(v, field, "a boolean", err);
	*out = json_is_true(v);
	return 0;
}

int req_u64(json_t *req, const char *field, uint64_t def, uint64_t *out, sbx_error_t *err)
{
	json_t *v = get(req, field);
	*out = def;
	if (v == NULL)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return req_type_error(v, field, "u64", err);
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

int req_u32_opt(json_t *req, const char *field, bool *present, uint32_t *out, sbx_error_t *err)
{
	json_t *v = get(req, field);
	if (present != NULL)
		*present = v != NULL;
	if (v == NULL)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > UINT32_MAX)
		return req_type_error(v, field, "u32", err);
	*out = (uint32_t)json_integer_value(v);
	return 0;
}

int req_u32(json_t *req, const char *field, uint32_t def, uint32_t *out, sbx_error_t *err)
{
	*out = def;
	return req_u32_opt(req, field, NULL, out, err);
}

int req_string_array(json_t *req, const char *field, json_t **out, sbx_error_t *err)
{
	json_t *v = get(req, field);
	*out = NULL;
	if (v == NULL)
		return 0;
	if (!json_is_array(v))
		return req_type_error(v, field, "a sequence of strings", err);
	size_t i;
	json_t *item;
	json_array_foreach(v, i, item) {
		if (!json_is_string(item))
			return req_type_error(item, field, "a string", err);
		if (req_check_nul(item, field, err) < 0)
			return -1;
	}
	*out = v;
	return 0;
}

char **req_strv_view(json_t *arr, const char *field, sbx_error_t *err)
{
	size_t n = json_array_size(arr);
	char **v = calloc(n + 1, sizeof(*v));
	if (v == NULL) {
		sbx_error_errno(err, ENOMEM, "%s", field);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		v[i] = (char *)json_string_value(json_array_get(arr, i));
	return v;
}

int req_sandbox_uuid(const char *input, char out[SBX_UUID_STRLEN + 1], sbx_error_t *err)
{
	if (sbx_uuid_parse(input, out))
		return 0;
	return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "sandbox_id is not a valid UUID: %s", input);
}

bool req_int_in(json_t *v, int64_t lo, int64_t hi)
{
	return json_is_integer(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi;
}

bool req_str_max(json_t *v, size_t max)
{
	return json_is_string(v) && json_string_length(v) > 0 && json_string_length(v) <= max &&
	       strlen(json_string_value(v)) == json_string_length(v);
}
