/* auto_resume, max_paused_sandboxes, snapshot_store_mb, idle_action,
 * paused_ttl_secs, live_restore (see config_pause.h). */
#include "adapter/config/config_pause.h"

#include <string.h>

#include "image/image_config.h"

void sbx_pause_config_init(struct sbx_pause_config *p)
{
	*p = (struct sbx_pause_config){ .auto_resume = true,
					.max_paused_sandboxes = SBX_MAX_PAUSED_DEFAULT,
					.snapshot_store_mb = SBX_SNAPSHOT_STORE_DEFAULT_MIB,
					.idle_action = SBX_IDLE_STOP,
					.paused_ttl_secs = SBX_PAUSED_TTL_DEFAULT_SECS };
}

static int boolean(const char *k, json_t *v, bool *out, sbx_error_t *err)
{
	if (!json_is_boolean(v))
		return sbx_config_type_error(err, k, "a boolean", v);
	*out = json_is_true(v);
	return 0;
}

static int parse_auto_resume(struct sbx_pause_config *p, const char *k, json_t *v, sbx_error_t *err)
{
	return boolean(k, v, &p->auto_resume, err);
}

static int parse_live_restore(struct sbx_pause_config *p, const char *k, json_t *v, sbx_error_t *err)
{
	return boolean(k, v, &p->live_restore, err);
}

/* An integer in lo..hi. */
static int bounded(const char *k, json_t *v, json_int_t lo, json_int_t hi, const char *expected, json_int_t *out,
		   sbx_error_t *err)
{
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return sbx_config_type_error(err, k, expected, v);
	*out = json_integer_value(v);
	return 0;
}

static int parse_max_paused(struct sbx_pause_config *p, const char *k, json_t *v, sbx_error_t *err)
{
	json_int_t n = 0;
	/* 0 is allowed: it turns pausing off. */
	if (bounded(k, v, 0, SBX_MAX_PAUSED_MAX, "an integer from 0 to 65536", &n, err) < 0)
		return -1;
	p->max_paused_sandboxes = (uint32_t)n;
	return 0;
}

static int parse_store(struct sbx_pause_config *p, const char *k, json_t *v, sbx_error_t *err)
{
	json_int_t n = 0;
	if (bounded(k, v, 0, UINT32_MAX, "an integer from 0 to 4294967295 (MiB)", &n, err) < 0)
		return -1;
	p->snapshot_store_mb = (uint32_t)n;
	return 0;
}

static int parse_idle_action(struct sbx_pause_config *p, const char *k, json_t *v, sbx_error_t *err)
{
	const char *s = json_string_value(v);
	if (s == NULL || (strcmp(s, "stop") != 0 && strcmp(s, "pause") != 0))
		return sbx_config_type_error(err, k, "\"stop\" or \"pause\"", v);
	p->idle_action = strcmp(s, "pause") == 0 ? SBX_IDLE_PAUSE : SBX_IDLE_STOP;
	return 0;
}

static int parse_ttl(struct sbx_pause_config *p, const char *k, json_t *v, sbx_error_t *err)
{
	json_int_t n = 0;
	/* 0 keeps a paused sandbox until a stop. */
	if (bounded(k, v, 0, INT32_MAX, "an integer of seconds from 0 (never) to 2147483647", &n, err) < 0)
		return -1;
	p->paused_ttl_secs = (uint64_t)n;
	return 0;
}

/* The keys' table (tests/integration/docs reads it, as config.c's). */
static const struct {
	const char *name;
	int (*parse)(struct sbx_pause_config *p, const char *k, json_t *v, sbx_error_t *err);
} pause_keys[] = {
	{ "auto_resume", parse_auto_resume },
	{ "max_paused_sandboxes", parse_max_paused },
	{ "snapshot_store_mb", parse_store },
	{ "idle_action", parse_idle_action },
	{ "paused_ttl_secs", parse_ttl },
	{ "live_restore", parse_live_restore },
};

int sbx_pause_config_parse_key(struct sbx_pause_config *p, const char *k, json_t *v, sbx_error_t *err)
{
	for (size_t i = 0; i < sizeof(pause_keys) / sizeof(pause_keys[0]); i++) {
		if (strcmp(k, pause_keys[i].name) == 0)
			return pause_keys[i].parse(p, k, v, err) < 0 ? -1 : 1;
	}
	return 0;
}

const char *sbx_pause_config_key(size_t i)
{
	return i < sizeof(pause_keys) / sizeof(pause_keys[0]) ? pause_keys[i].name : NULL;
}

int sbx_pause_config_print(const struct sbx_pause_config *p, json_t *obj)
{
	if (json_object_set_new(obj, "auto_resume", json_boolean(p->auto_resume)) < 0 ||
	    json_object_set_new(obj, "max_paused_sandboxes", json_integer(p->max_paused_sandboxes)) < 0 ||
	    json_object_set_new(obj, "snapshot_store_mb", json_integer(p->snapshot_store_mb)) < 0 ||
	    json_object_set_new(obj, "idle_action",
				json_string(p->idle_action == SBX_IDLE_PAUSE ? "pause" : "stop")) < 0 ||
	    json_object_set_new(obj, "paused_ttl_secs", json_integer((json_int_t)p->paused_ttl_secs)) < 0 ||
	    json_object_set_new(obj, "live_restore", json_boolean(p->live_restore)) < 0)
		return -1;
	return 0;
}
