/* StreamChannelRef values and engine::channels::create. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_channel.h"

#define CREATE_TIMEOUT_MS 10000

static int ref_field(json_t *obj, const char *key, char **out, sbx_error_t *err)
{
	json_t *v = json_object_get(obj, key);
	if (!json_is_string(v))
		return sbx_error_set(err, EINVAL, "channel ref: `%s` must be a string", key);
	size_t n = json_string_length(v);
	if (n == 0 || n > CHANNEL_ID_MAX)
		return sbx_error_set(err, EINVAL, "channel ref: `%s` must hold 1-%u bytes", key, CHANNEL_ID_MAX);
	if (memchr(json_string_value(v), '\0', n) != NULL)
		return sbx_error_set(err, EINVAL, "channel ref: `%s` holds a NUL byte", key);
	*out = strdup(json_string_value(v));
	if (*out == NULL)
		return sbx_error_errno(err, ENOMEM, "channel ref");
	return 0;
}

int channel_ref_parse(json_t *obj, struct channel_ref *ref, sbx_error_t *err)
{
	memset(ref, 0, sizeof(*ref));
	if (!json_is_object(obj))
		return sbx_error_set(err, EINVAL, "channel ref: not an object");
	const char *dir = json_string_value(json_object_get(obj, "direction"));
	if (dir == NULL || (strcmp(dir, "read") != 0 && strcmp(dir, "write") != 0))
		return sbx_error_set(err, EINVAL, "channel ref: `direction` must be \"read\" or \"write\"");
	if (ref_field(obj, "channel_id", &ref->channel_id, err) < 0 ||
	    ref_field(obj, "access_key", &ref->access_key, err) < 0) {
		channel_ref_free(ref);
		return -1;
	}
	strcpy(ref->direction, dir);
	return 0;
}

json_t *channel_ref_json(const struct channel_ref *ref)
{
	return json_pack("{s:s, s:s, s:s}", "channel_id", ref->channel_id, "access_key", ref->access_key, "direction",
			 ref->direction);
}

void channel_ref_free(struct channel_ref *ref)
{
	free(ref->channel_id);
	free(ref->access_key);
	ref->channel_id = ref->access_key = NULL;
}

int channel_create(struct engine *e, const struct engine_invocation *parent, int buffer_size,
		   struct channel_ref *writer, struct channel_ref *reader, sbx_error_t *err)
{
	memset(writer, 0, sizeof(*writer));
	memset(reader, 0, sizeof(*reader));
	json_t *req = json_pack("{s:i}", "buffer_size", buffer_size > 0 ? buffer_size : CHANNEL_DEFAULT_BUFFER);
	if (req == NULL)
		return sbx_error_errno(err, ENOMEM, "engine::channels::create");
	json_t *res = NULL, *ebody = NULL;
	int r = engine_call(e, parent, "engine::channels::create", req, CREATE_TIMEOUT_MS, &res, &ebody, err);
	json_decref(req);
	if (r == 1) {
		const char *m = json_string_value(json_object_get(ebody, "message"));
		sbx_error_set(err, EIO, "engine::channels::create failed: %s", m != NULL ? m : "no message");
		json_decref(ebody);
		return -1;
	}
	if (r < 0)
		return -1;
	int rc = 0;
	if (channel_ref_parse(json_object_get(res, "writer"), writer, err) < 0 ||
	    channel_ref_parse(json_object_get(res, "reader"), reader, err) < 0) {
		sbx_error_prefix(err, "engine::channels::create answered");
		channel_ref_free(writer);
		rc = -1;
	}
	json_decref(res);
	return rc;
}
