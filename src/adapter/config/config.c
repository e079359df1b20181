#include "adapter/config/config.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/nearest.h"
#include "vm/disk.h"
#include "vm/qemu_cmdline.h"

struct sbx_config *sbx_config_defaults(sbx_error_t *err)
{
	struct sbx_config *cfg = calloc(1, sizeof(*cfg));
	if (cfg == NULL)
		return sbx_error_errno(err, ENOMEM, "config"), NULL;
	if ((cfg->accel_in_use = calloc(1, sizeof(*cfg->accel_in_use))) == NULL) {
		free(cfg);
		return sbx_error_errno(err, ENOMEM, "config"), NULL;
	}
	sbx_accel_choice_init(cfg->accel_in_use, SBX_ACCEL_AUTO);
	sbx_image_config_init(&cfg->images);
	cfg->default_idle_timeout_secs = 300;
	cfg->max_concurrent_sandboxes = 32;
	cfg->max_concurrent_exec_per_sandbox = 4;
	cfg->max_exec_timeout_ms = 300000;
	cfg->max_background_per_sandbox = 16;
	cfg->background_log_bytes = 1048576;
	cfg->max_follows_per_sandbox = 16;
	cfg->max_follows = 256;
	cfg->default_cpus = 1;
	cfg->default_memory_mb = 512;
	cfg->accel = SBX_ACCEL_AUTO;
	cfg->tcg_cache_mb = SBX_VM_TCG_CACHE_DEFAULT_MIB;
	cfg->template_cache_mb = SBX_TEMPLATE_CACHE_DEFAULT_MIB;
	cfg->warm_pool_max = SBX_WARM_POOL_MAX_DEFAULT;
	cfg->standby = true;
	cfg->scratch_disk_mb = SBX_SCRATCH_DEFAULT_MIB;
	cfg->worker_disk_mb = SBX_WORKER_DISK_DEFAULT_MIB;
	cfg->max_guest_pids = 1024;
	net_config_init(&cfg->net);
	sbx_publish_config_init(&cfg->publish);
	sbx_pause_config_init(&cfg->pause);
	cfg->jail = SBX_JAIL_AUTO;
	cfg->jail_uid_base = SBX_JAIL_UID_BASE_DEFAULT;
	return cfg;
}

void sbx_config_free(struct sbx_config *cfg)
{
	if (cfg == NULL)
		return;
	sbx_image_config_free(&cfg->images);
	for (size_t i = 0; i < cfg->n_image_allowlist; i++)
		free(cfg->image_allowlist[i]);
	free(cfg->image_allowlist);
	for (size_t i = 0; i < cfg->n_per_image_caps; i++)
		free(cfg->per_image_caps[i].image);
	free(cfg->per_image_caps);
	for (size_t i = 0; i < cfg->n_warm_pool; i++)
		free(cfg->warm_pool[i].image);
	free(cfg->warm_pool);
	free(cfg->krunfw_path);
	free(cfg->accel_in_use);
	free(cfg->control_socket);
	free(cfg->control_group);
	net_config_free(&cfg->net);
	sbx_metrics_listen_free(&cfg->metrics_listen);
	free(cfg);
}

static int get_uint(json_t *v, const char *key, uint64_t max, uint64_t *out, sbx_error_t *err)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max)
		return sbx_config_type_error(err, key,
					     max == UINT32_MAX ? "an unsigned 32-bit integer" : "an unsigned integer", v);
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static int get_u32(json_t *v, const char *key, uint32_t *out, sbx_error_t *err)
{
	uint64_t x = 0;
	if (get_uint(v, key, UINT32_MAX, &x, err) < 0)
		return -1;
	*out = (uint32_t)x;
	return 0;
}

static int parse_allowlist(struct sbx_config *cfg, const char *key, json_t *v, sbx_error_t *err)
{
	if (!json_is_array(v))
		return sbx_config_type_error(err, "image_allowlist", "a list of strings", v);
	cfg->image_allowlist = calloc(json_array_size(v) + 1, sizeof(char *));
	if (cfg->image_allowlist == NULL)
		return sbx_error_errno(err, ENOMEM, "config");
	size_t i;
	json_t *item;
	json_array_foreach(v, i, item) {
		if (sbx_config_dup_string(item, "image_allowlist[]", &cfg->image_allowlist[i], err) < 0)
			return -1;
		cfg->n_image_allowlist++;
	}
	return 0;
}

static const char *const caps_fields[] = { "max_cpus", "max_memory_mb" };

static int parse_caps(struct sbx_config *cfg, const char *key, json_t *v, sbx_error_t *err)
{
	if (!json_is_object(v))
		return sbx_config_type_error(err, "per_image_caps", "a map of {max_cpus, max_memory_mb}", v);
	cfg->per_image_caps = calloc(json_object_size(v) + 1, sizeof(*cfg->per_image_caps));
	if (cfg->per_image_caps == NULL)
		return sbx_error_errno(err, ENOMEM, "config");
	const char *k;
	json_t *item;
	json_object_foreach(v, k, item) {
		if (!json_is_object(item))
			return sbx_error_set(err, EINVAL, "config key `per_image_caps.%s`: expected a map, got %s", k,
					     sbx_config_json_kind(item));
		/* [P] quirk kept on purpose: a field left out defaults to 0, so an
		 * entry with only max_cpus rejects every create on memory. */
		struct sbx_image_caps *c = &cfg->per_image_caps[cfg->n_per_image_caps];
		json_t *cpus = json_object_get(item, caps_fields[0]);
		json_t *mem = json_object_get(item, caps_fields[1]);
		sbx_warn_unknown_fields("per_image_caps", k, item, caps_fields, 2);
		if ((cpus != NULL && get_u32(cpus, "per_image_caps.*.max_cpus", &c->max_cpus, err) < 0) ||
		    (mem != NULL && get_u32(mem, "per_image_caps.*.max_memory_mb", &c->max_memory_mb, err) < 0))
			return sbx_error_prefix(err, "image '%s'", k);
		c->image = strdup(k);
		if (c->image == NULL)
			return sbx_error_errno(err, ENOMEM, "config");
		cfg->n_per_image_caps++;
	}
	return 0;
}

static int parse_warm_pool(struct sbx_config *cfg, const char *key, json_t *v, sbx_error_t *err)
{
	if (!json_is_object(v))
		return sbx_config_type_error(err, "warm_pool", "a map of image name to count", v);
	cfg->warm_pool = calloc(json_object_size(v) + 1, sizeof(*cfg->warm_pool));
	if (cfg->warm_pool == NULL)
		return sbx_error_errno(err, ENOMEM, "config");
	const char *k;
	json_t *item;
	json_object_foreach(v, k, item) {
		if (k[0] == '\0')
			return sbx_error_set(err, EINVAL, "config key `warm_pool`: an empty image name");
		struct sbx_warm_pool_entry *e = &cfg->warm_pool[cfg->n_warm_pool];
		if (get_u32(item, "warm_pool.*", &e->count, err) < 0)
			return sbx_error_prefix(err, "image '%s'", k);
		if ((e->image = strdup(k)) == NULL)
			return sbx_error_errno(err, ENOMEM, "config");
		cfg->n_warm_pool++;
	}
	return 0;
}

/* A string naming one of `names` (indexed by value): *out is its index. */
static int parse_enum(json_t *v, const char *key, const char *const *names, size_t n, const char *expected, int *out,
		      sbx_error_t *err)
{
	if (!json_is_string(v))
		return sbx_config_type_error(err, key, expected, v);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(json_string_value(v), names[i]) == 0) {
			*out = (int)i;
			return 0;
		}
	}
	return sbx_error_set(err, EINVAL, "config key `%s`: expected %s, got '%s'", key, expected,
			     json_string_value(v));
}

static int parse_accel(struct sbx_config *cfg, const char *key, json_t *v, sbx_error_t *err)
{
	static const char *const names[] = { [SBX_ACCEL_AUTO] = "auto", [SBX_ACCEL_KVM] = "kvm", [SBX_ACCEL_TCG] = "tcg" };
	int i;
	if (parse_enum(v, "accel", names, sizeof(names) / sizeof(names[0]), "\"auto\", \"kvm\" or \"tcg\"", &i, err) < 0)
		return -1;
	cfg->accel = (enum sbx_accel)i;
	return 0;
}

static int parse_jail(struct sbx_config *cfg, const char *key, json_t *v, sbx_error_t *err)
{
	static const char *const names[] = { [SBX_JAIL_AUTO] = "auto", [SBX_JAIL_REQUIRED] = "required",
					     [SBX_JAIL_OFF] = "off" };
	int i;
	if (parse_enum(v, "jail", names, sizeof(names) / sizeof(names[0]), "\"auto\", \"required\" or \"off\"", &i, err) < 0)
		return -1;
	cfg->jail = (enum sbx_jail_mode)i;
	return 0;
}

static int parse_exec_per_sandbox(struct sbx_config *cfg, const char *k, json_t *v, sbx_error_t *err)
{
	uint64_t u = 0;
	if (get_uint(v, k, UINT32_MAX, &u, err) < 0)
		return -1;
	if (u == 0)
		sbx_warn("config: max_concurrent_exec_per_sandbox is 0, which means 1 (execs run one at a "
			 "time), not unlimited");
	cfg->max_concurrent_exec_per_sandbox = u == 0 ? 1 : (uint32_t)u;
	return 0;
}

/* An integer in lo..hi. */
static int parse_bounded(json_t *v, const char *k, uint32_t lo, uint32_t hi, uint32_t *out, sbx_error_t *err)
{
	uint64_t u = 0;
	if (get_uint(v, k, UINT32_MAX, &u, err) < 0)
		return -1;
	if (u < lo || u > hi)
		return sbx_error_set(err, EINVAL, "config key `%s`: must be %u..%u, got %llu", k, lo, hi,
				     (unsigned long long)u);
	*out = (uint32_t)u;
	return 0;
}

static int parse_background_max(struct sbx_config *cfg, const char *k, json_t *v, sbx_error_t *err)
{
	return parse_bounded(v, k, 1, SBX_BACKGROUND_MAX, &cfg->max_background_per_sandbox, err);
}

static int parse_background_log(struct sbx_config *cfg, const char *k, json_t *v, sbx_error_t *err)
{
	return parse_bounded(v, k, SBX_BACKGROUND_LOG_MIN, SBX_BACKGROUND_LOG_MAX, &cfg->background_log_bytes, err);
}

/* max_follows_per_sandbox and max_follows. */
static int parse_follows(struct sbx_config *cfg, const char *k, json_t *v, sbx_error_t *err)
{
	return parse_bounded(v, k, 1, SBX_FOLLOWS_MAX,
			     strcmp(k, "max_follows") == 0 ? &cfg->max_follows : &cfg->max_follows_per_sandbox, err);
}

/* A disk size in MiB within the scratch disk's bounds. */
static int parse_disk_mib(json_t *v, const char *k, uint32_t *out, sbx_error_t *err)
{
	uint64_t u = 0;
	if (get_uint(v, k, UINT32_MAX, &u, err) < 0)
		return -1;
	if (u < SBX_SCRATCH_MIN_MIB || u > SBX_SCRATCH_MAX_MIB)
		return sbx_error_set(err, EINVAL, "config key `%s`: must be %d..%u (MiB), got %llu", k,
				     SBX_SCRATCH_MIN_MIB, SBX_SCRATCH_MAX_MIB, (unsigned long long)u);
	*out = (uint32_t)u;
	return 0;
}

static int parse_scratch_disk(struct sbx_config *cfg, const char *k, json_t *v, sbx_error_t *err)
{
	return parse_disk_mib(v, k, &cfg->scratch_disk_mb, err);
}

static int parse_worker_disk(struct sbx_config *cfg, const char *k, json_t *v, sbx_error_t *err)
{
	return parse_disk_mib(v, k, &cfg->worker_disk_mb, err);
}

static int parse_tcg_cache(struct sbx_config *cfg, const char *k, json_t *v, sbx_error_t *err)
{
	uint64_t u = 0;
	if (get_uint(v, k, UINT32_MAX, &u, err) < 0)
		return -1;
	if (u == 0 || u > SBX_VM_TCG_CACHE_MAX_MIB)
		return sbx_error_set(err, EINVAL, "config key `tcg_cache_mb`: must be 1..%d (MiB), got %llu",
				     SBX_VM_TCG_CACHE_MAX_MIB, (unsigned long long)u);
	cfg->tcg_cache_mb = (uint32_t)u;
	return 0;
}

static int parse_standby(struct sbx_config *cfg, const char *k, json_t *v, sbx_error_t *err)
{
	if (!json_is_boolean(v))
		return sbx_config_type_error(err, k, "a boolean", v);
	cfg->standby = json_is_true(v);
	return 0;
}

static int parse_template_cache(struct sbx_config *cfg, const char *k, json_t *v, sbx_error_t *err)
{
	uint64_t u = 0;
	if (get_uint(v, k, UINT32_MAX, &u, err) < 0)
		return -1;
	if (u == 0)
		return sbx_error_set(err, EINVAL, "config key `template_cache_mb`: must be at least 1 (MiB)");
	cfg->template_cache_mb = (uint32_t)u;
	return 0;
}

static int parse_memory_budget(struct sbx_config *cfg, const char *k, json_t *v, sbx_error_t *err)
{
	if (get_uint(v, k, UINT64_MAX / 2, &cfg->memory_budget_mb, err) < 0)
		return -1;
	if (cfg->memory_budget_mb == 0)
		return sbx_error_set(err, EINVAL, "config key `memory_budget_mb`: must be at least 1 (MiB); "
						  "leave it out for MemTotal less the host's reserve");
	return 0;
}

static int parse_jail_uid_base(struct sbx_config *cfg, const char *k, json_t *v, sbx_error_t *err)
{
	uint64_t u = 0;
	if (get_uint(v, k, UINT32_MAX - 1 - SBX_JAIL_UID_COUNT, &u, err) < 0)
		return -1;
	if (u == 0)
		return sbx_error_set(err, EINVAL, "config key `jail_uid_base`: must be at least 1 (uid 0 is root)");
	cfg->jail_uid_base = (uint32_t)u;
	return 0;
}

static int parse_krunfw(struct sbx_config *cfg, const char *k, json_t *v, sbx_error_t *err)
{
	return sbx_config_dup_string(v, k, &cfg->krunfw_path, err);
}

static int parse_network_policy(struct sbx_config *cfg, const char *k, json_t *v, sbx_error_t *err)
{
	return net_config_parse(v, &cfg->net, err);
}

static int parse_control(struct sbx_config *cfg, const char *k, json_t *v, sbx_error_t *err)
{
	return sbx_config_dup_string(v, k, strcmp(k, "control_group") == 0 ? &cfg->control_group : &cfg->control_socket, err);
}

static int parse_metrics_listen(struct sbx_config *cfg, const char *k, json_t *v, sbx_error_t *err)
{
	return sbx_config_parse_metrics_listen(v, &cfg->metrics_listen, err);
}

enum key_kind { KEY_U32, KEY_U64, KEY_FN };

/* The adapter's own keys (the image store's are in image_config.c): the
 * one list the parser reads and the unknown-key warning compares with. */
static const struct config_key {
	const char *name;
	enum key_kind kind;
	size_t offset; /* KEY_U32, KEY_U64: the field of struct sbx_config */
	int (*parse)(struct sbx_config *cfg, const char *k, json_t *v, sbx_error_t *err);
} config_keys[] = {
#define U32(f) { #f, KEY_U32, offsetof(struct sbx_config, f), NULL }
#define U64(f) { #f, KEY_U64, offsetof(struct sbx_config, f), NULL }
#define FN(n, fn) { n, KEY_FN, 0, fn }
	FN("image_allowlist", parse_allowlist),
	U64(default_idle_timeout_secs),
	U32(max_concurrent_sandboxes),
	FN("max_concurrent_exec_per_sandbox", parse_exec_per_sandbox),
	U64(max_exec_timeout_ms),
	FN("max_background_per_sandbox", parse_background_max),
	FN("background_log_bytes", parse_background_log),
	FN("max_follows_per_sandbox", parse_follows),
	FN("max_follows", parse_follows),
	U32(default_cpus),
	U32(default_memory_mb),
	FN("per_image_caps", parse_caps),
	FN("accel", parse_accel),
	U32(max_guest_pids),
	FN("scratch_disk_mb", parse_scratch_disk),
	FN("worker_disk_mb", parse_worker_disk),
	FN("tcg_cache_mb", parse_tcg_cache),
	FN("warm_pool", parse_warm_pool),
	U32(warm_pool_max),
	FN("standby", parse_standby),
	FN("template_cache_mb", parse_template_cache),
	FN("memory_budget_mb", parse_memory_budget),
	FN("jail", parse_jail),
	FN("jail_uid_base", parse_jail_uid_base),
	FN("krunfw_path", parse_krunfw),
	FN("network_policy", parse_network_policy),
	FN("control_socket", parse_control),
	FN("control_group", parse_control),
	FN("metrics_listen", parse_metrics_listen),
#undef U32
#undef U64
#undef FN
};
#define N_CONFIG_KEYS (sizeof(config_keys) / sizeof(config_keys[0]))

size_t sbx_config_key_names(const char **out, size_t cap)
{
	size_t n = 0;
	for (const char *k; (k = sbx_image_config_key(n)) != NULL; n++)
		if (n < cap)
			out[n] = k;
	const char *(*const more[])(size_t) = { sbx_publish_config_key, sbx_pause_config_key };
	for (size_t m = 0; m < sizeof(more) / sizeof(more[0]); m++)
		for (size_t i = 0; more[m](i) != NULL; i++, n++)
			if (n < cap)
				out[n] = more[m](i);
	for (size_t i = 0; i < N_CONFIG_KEYS; i++, n++)
		if (n < cap)
			out[n] = config_keys[i].name;
	return n;
}

static void warn_unknown(const char *k)
{
	const char *names[SBX_CONFIG_MAX_KEYS];
	size_t n = sbx_config_key_names(names, SBX_CONFIG_MAX_KEYS);
	sbx_warn_unknown_key("", k, names, n < SBX_CONFIG_MAX_KEYS ? n : SBX_CONFIG_MAX_KEYS);
}

static int parse_key(struct sbx_config *cfg, const char *k, json_t *v, sbx_error_t *err)
{
	int rc = sbx_image_config_parse_key(&cfg->images, k, v, err);
	if (rc == 0)
		rc = sbx_publish_config_parse_key(&cfg->publish, k, v, err);
	if (rc == 0)
		rc = sbx_pause_config_parse_key(&cfg->pause, k, v, err);
	if (rc != 0)
		return rc < 0 ? -1 : 0;
	for (size_t i = 0; i < N_CONFIG_KEYS; i++) {
		const struct config_key *ck = &config_keys[i];
		if (strcmp(k, ck->name) != 0)
			continue;
		char *field = (char *)cfg + ck->offset;
		switch (ck->kind) {
		case KEY_U32: return get_u32(v, k, (uint32_t *)(void *)field, err);
		case KEY_U64: return get_uint(v, k, UINT64_MAX, (uint64_t *)(void *)field, err);
		case KEY_FN: return ck->parse(cfg, k, v, err);
		}
	}
	/* Unknown keys are ignored (contract §4.3), but named: a typo would
	 * otherwise leave its default in place unseen. */
	warn_unknown(k);
	return 0;
}

struct sbx_config *sbx_config_parse(json_t *value, sbx_error_t *err)
{
	if (value == NULL || json_is_null(value))
		return sbx_config_defaults(err);
	json_t *map = value;
	if (json_is_array(value)) {
		if (json_array_size(value) != 1)
			return sbx_error_set(err, EINVAL, "config: expected a map or a list holding one map, got a list "
							  "of %zu entries",
					     json_array_size(value)), NULL;
		map = json_array_get(value, 0);
	}
	if (!json_is_object(map))
		return sbx_error_set(err, EINVAL, "config: expected a map or a list holding one map, got %s",
				     sbx_config_json_kind(map)), NULL;
	if (json_object_get(map, "sandbox") != NULL)
		return sbx_error_set(err, EINVAL,
				     "legacy wrapped shape detected: move fields from `sandbox:` to the top level of "
				     "the sandbox-libkrun configuration"), NULL;
	struct sbx_config *cfg = sbx_config_defaults(err);
	if (cfg == NULL)
		return NULL;
	const char *k;
	json_t *v;
	json_object_foreach(map, k, v) {
		if (parse_key(cfg, k, v, err) < 0) {
			sbx_config_free(cfg);
			return NULL;
		}
	}
	return cfg;
}

bool sbx_config_allows(const struct sbx_config *cfg, const char *image)
{
	for (size_t i = 0; i < cfg->n_image_allowlist; i++) {
		if (strcmp(cfg->image_allowlist[i], image) == 0)
			return true;
	}
	return false;
}

int sbx_config_decide_accel(const struct sbx_config *cfg, sbx_error_t *err)
{
	sbx_accel_choice_init(cfg->accel_in_use, cfg->accel);
	return sbx_accel_choice_decide(cfg->accel_in_use, err);
}

enum sbx_accel sbx_config_accel(const struct sbx_config *cfg)
{
	int a = atomic_load(&cfg->accel_in_use->in_use);
	return a != SBX_ACCEL_AUTO ? (enum sbx_accel)a : cfg->accel;
}

uint32_t sbx_config_tcg_cache_mib(const struct sbx_config *cfg)
{
	return sbx_config_accel(cfg) == SBX_ACCEL_KVM ? 0 : cfg->tcg_cache_mb;
}

const struct sbx_image_caps *sbx_config_caps(const struct sbx_config *cfg, const char *image)
{
	for (size_t i = 0; i < cfg->n_per_image_caps; i++) {
		if (strcmp(cfg->per_image_caps[i].image, image) == 0)
			return &cfg->per_image_caps[i];
	}
	return NULL;
}
