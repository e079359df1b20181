#include "adapter/config/config_print.h"

#include <errno.h>
#include <string.h>

#include "vm/accel.h"

static json_t *strings(char *const *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; a != NULL && i < n; i++) {
		if (json_array_append_new(a, json_string(v[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static json_t *rules(const struct net_rules *rs)
{
	json_t *a = json_array();
	for (size_t i = 0; a != NULL && i < rs->n; i++) {
		if (json_array_append_new(a, json_string(rs->v[i].text)) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

/* dns_servers: null = the host's resolv.conf; else the "ip:port" list. */
static json_t *dns_servers(const char *csv)
{
	if (csv == NULL)
		return json_null();
	json_t *a = json_array();
	for (const char *p = csv; a != NULL && *p != '\0';) {
		size_t len = strcspn(p, ",");
		if (json_array_append_new(a, json_stringn(p, len)) < 0) {
			json_decref(a);
			return NULL;
		}
		p += len + (p[len] == ',');
	}
	return a;
}

static json_t *network_policy(const struct net_config *n)
{
	json_t *ports = json_array();
	for (size_t i = 0; ports != NULL && i < n->policy.n_host_ports; i++) {
		if (json_array_append_new(ports, json_integer(n->policy.host_ports[i])) < 0) {
			json_decref(ports);
			return NULL;
		}
	}
	return json_pack("{s:o, s:o, s:o, s:o}", "allow", rules(&n->policy.allow), "deny", rules(&n->policy.deny),
			 "host_ports", ports, "dns_servers", dns_servers(n->dns_servers));
}

/* The image store's keys. */
static json_t *images(const struct sbx_image_config *c)
{
	json_t *out = json_pack("{s:b, s:I, s:I, s:I}", "auto_install", c->auto_install, "image_max_entries",
				(json_int_t)c->limits.max_entries, "image_max_mb", (json_int_t)(c->limits.max_bytes >> 20),
				"image_max_blob_mb", (json_int_t)(c->limits.max_blob_bytes >> 20));
	json_t *custom = json_object(), *mirrors = json_object(), *auth = json_object();
	if (out == NULL || custom == NULL || mirrors == NULL || auth == NULL)
		goto fail;
	for (size_t i = 0; i < c->n_custom; i++)
		if (json_object_set_new(custom, c->custom[i].name, json_string(c->custom[i].ref)) < 0)
			goto fail;
	for (size_t i = 0; i < c->n_mirrors; i++)
		if (json_object_set_new(mirrors, c->mirrors[i].host, json_string(c->mirrors[i].url)) < 0)
			goto fail;
	/* The username as written (often "${VAR}"); the password never. */
	for (size_t i = 0; i < c->n_creds; i++)
		if (json_object_set_new(auth, c->creds[i].host,
					json_pack("{s:s, s:s}", "username", c->creds[i].username, "password", "<hidden>")) < 0)
			goto fail;
	if (json_object_set_new(out, "custom_images", custom) == 0 &&
	    json_object_set_new(out, "registry_mirrors", mirrors) == 0 &&
	    json_object_set_new(out, "registry_auth", auth) == 0)
		return out;
	json_decref(out);
	return NULL;
fail:
	json_decref(out);
	json_decref(custom);
	json_decref(mirrors);
	json_decref(auth);
	return NULL;
}

static json_t *caps(const struct sbx_config *cfg)
{
	json_t *o = json_object();
	for (size_t i = 0; o != NULL && i < cfg->n_per_image_caps; i++) {
		const struct sbx_image_caps *c = &cfg->per_image_caps[i];
		if (json_object_set_new(o, c->image, json_pack("{s:I, s:I}", "max_cpus", (json_int_t)c->max_cpus,
								"max_memory_mb", (json_int_t)c->max_memory_mb)) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

static json_t *warm_pool(const struct sbx_config *cfg)
{
	json_t *o = json_object();
	for (size_t i = 0; o != NULL && i < cfg->n_warm_pool; i++) {
		if (json_object_set_new(o, cfg->warm_pool[i].image, json_integer(cfg->warm_pool[i].count)) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

json_t *sbx_config_to_json(const struct sbx_config *cfg, sbx_error_t *err)
{
	json_t *out = images(&cfg->images);
	/* memory_budget_mb and krunfw_path: null when left to the host (MemTotal
	 * less the reserve; SANDBOX_KRUNFW or the installed copy); control_socket
	 * null for the default path (docs/cli.md), control_group and
	 * metrics_listen null when off. */
	json_t *rest = json_pack(
		"{s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:s, s:s?, s:I, s:I, s:o, s:I, s:b, s:I, s:I, s:I, "
		"s:o, s:o, s:s, s:I, s:s?, s:s?, s:s?}",
		"image_allowlist", strings(cfg->image_allowlist, cfg->n_image_allowlist), "default_idle_timeout_secs",
		(json_int_t)cfg->default_idle_timeout_secs, "max_concurrent_sandboxes",
		(json_int_t)cfg->max_concurrent_sandboxes, "max_concurrent_exec_per_sandbox",
		(json_int_t)cfg->max_concurrent_exec_per_sandbox, "max_exec_timeout_ms", (json_int_t)cfg->max_exec_timeout_ms,
		"default_cpus", (json_int_t)cfg->default_cpus, "default_memory_mb", (json_int_t)cfg->default_memory_mb,
		"per_image_caps", caps(cfg), "accel", sbx_accel_name(cfg->accel), "krunfw_path", cfg->krunfw_path,
		"tcg_cache_mb", (json_int_t)cfg->tcg_cache_mb, "template_cache_mb", (json_int_t)cfg->template_cache_mb,
		"warm_pool", warm_pool(cfg), "warm_pool_max", (json_int_t)cfg->warm_pool_max, "standby", cfg->standby,
		"scratch_disk_mb", (json_int_t)cfg->scratch_disk_mb, "worker_disk_mb", (json_int_t)cfg->worker_disk_mb,
		"max_guest_pids", (json_int_t)cfg->max_guest_pids, "memory_budget_mb",
		cfg->memory_budget_mb > 0 ? json_integer((json_int_t)cfg->memory_budget_mb) : json_null(),
		"network_policy", network_policy(&cfg->net), "jail", sbx_jail_mode_name(cfg->jail), "jail_uid_base",
		(json_int_t)cfg->jail_uid_base, "control_socket", cfg->control_socket, "control_group", cfg->control_group,
		"metrics_listen", cfg->metrics_listen.text);
	if (rest != NULL && (json_object_set_new(rest, "max_background_per_sandbox",
						 json_integer(cfg->max_background_per_sandbox)) < 0 ||
			     json_object_set_new(rest, "background_log_bytes", json_integer(cfg->background_log_bytes)) < 0 ||
			     json_object_set_new(rest, "max_follows_per_sandbox",
						 json_integer(cfg->max_follows_per_sandbox)) < 0 ||
			     json_object_set_new(rest, "max_follows", json_integer(cfg->max_follows)) < 0 ||
			     sbx_publish_config_print(&cfg->publish, rest) < 0 ||
			     sbx_pause_config_print(&cfg->pause, rest) < 0)) {
		json_decref(rest);
		rest = NULL;
	}
	if (out == NULL || rest == NULL || json_object_update(out, rest) < 0) {
		json_decref(out);
		json_decref(rest);
		return sbx_error_errno(err, ENOMEM, "config"), NULL;
	}
	json_decref(rest);
	return out;
}
