#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapter/config/config.h"
#include "adapter/sandbox/catalog.h"
#include "harness.h"

static struct sbx_config *parse(const char *text, sbx_error_t *err)
{
	json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	struct sbx_config *cfg = sbx_config_parse(v, err);
	json_decref(v);
	return cfg;
}

/* Parses `text`, expecting a fatal error whose message contains `needle`. */
static int fails_with(const char *text, const char *needle)
{
	sbx_error_t err = NULL;
	struct sbx_config *cfg = parse(text, &err);
	int ok = cfg == NULL && err != NULL && strstr(sbx_error_msg(err), needle) != NULL;
	sbx_config_free(cfg);
	sbx_error_free(&err);
	return ok;
}

TEST(config_defaults_for_null_and_absent)
{
	sbx_error_t err = NULL;
	struct sbx_config *cfg = sbx_config_parse(NULL, &err);
	CHECK(cfg != NULL);
	CHECK(cfg->images.auto_install);
	CHECK(cfg->images.limits.max_entries == 1000000);
	CHECK(cfg->images.limits.max_bytes == 32ull << 30);
	CHECK(cfg->images.limits.max_blob_bytes == 16ull << 30);
	CHECK_INT(cfg->n_image_allowlist, 0);
	CHECK_INT(cfg->default_idle_timeout_secs, 300);
	CHECK_INT(cfg->max_concurrent_sandboxes, 32);
	CHECK_INT(cfg->max_concurrent_exec_per_sandbox, 4);
	CHECK_INT(cfg->max_exec_timeout_ms, 300000);
	CHECK_INT(cfg->default_cpus, 1);
	CHECK_INT(cfg->default_memory_mb, 512);
	CHECK_INT(cfg->accel, SBX_ACCEL_AUTO);
	CHECK(cfg->krunfw_path == NULL);
	CHECK_INT(cfg->tcg_cache_mb, 64);
	CHECK_INT(cfg->template_cache_mb, 2048);
	CHECK_INT(cfg->n_warm_pool, 0);
	CHECK_INT(cfg->warm_pool_max, 8);
	CHECK(cfg->standby);
	CHECK_INT(cfg->memory_budget_mb, 0);
	CHECK_INT(cfg->scratch_disk_mb, 2048);
	CHECK_INT(cfg->worker_disk_mb, 4096);
	CHECK_INT(cfg->jail, SBX_JAIL_AUTO);
	CHECK_INT(cfg->jail_uid_base, 900000);
	sbx_config_free(cfg);
	cfg = parse("null", &err);
	CHECK(cfg != NULL);
	CHECK_INT(cfg->max_concurrent_sandboxes, 32);
	sbx_config_free(cfg);
}

TEST(config_flat_map_and_list_shape)
{
	const char *flat = "{\"auto_install\":false,\"image_allowlist\":[\"python\",\"node\"],\"default_cpus\":2,"
			   "\"default_memory_mb\":1024,\"max_concurrent_sandboxes\":3,\"max_exec_timeout_ms\":50,"
			   "\"default_idle_timeout_secs\":7,\"unknown_key\":{\"x\":1}}";
	char list[512];
	snprintf(list, sizeof(list), "[%s]", flat);
	const char *texts[] = { flat, list };
	for (int i = 0; i < 2; i++) {
		sbx_error_t err = NULL;
		struct sbx_config *cfg = parse(texts[i], &err);
		CHECK(cfg != NULL);
		CHECK(!cfg->images.auto_install);
		CHECK_INT(cfg->n_image_allowlist, 2);
		CHECK(sbx_config_allows(cfg, "node"));
		CHECK(!sbx_config_allows(cfg, "ruby"));
		CHECK_INT(cfg->default_cpus, 2);
		CHECK_INT(cfg->default_memory_mb, 1024);
		CHECK_INT(cfg->max_concurrent_sandboxes, 3);
		CHECK_INT(cfg->max_exec_timeout_ms, 50);
		CHECK_INT(cfg->default_idle_timeout_secs, 7);
		sbx_config_free(cfg);
	}
}

TEST(config_exec_cap_zero_means_one)
{
	sbx_error_t err = NULL;
	struct sbx_config *cfg = parse("{\"max_concurrent_exec_per_sandbox\":0}", &err);
	CHECK(cfg != NULL);
	CHECK_INT(cfg->max_concurrent_exec_per_sandbox, 1);
	sbx_config_free(cfg);
}

TEST(config_per_image_caps_default_to_zero)
{
	sbx_error_t err = NULL;
	struct sbx_config *cfg = parse("{\"per_image_caps\":{\"python\":{\"max_cpus\":2}}}", &err);
	CHECK(cfg != NULL);
	const struct sbx_image_caps *c = sbx_config_caps(cfg, "python");
	CHECK(c != NULL);
	CHECK_INT(c->max_cpus, 2);
	CHECK_INT(c->max_memory_mb, 0);
	CHECK(sbx_config_caps(cfg, "node") == NULL);
	sbx_config_free(cfg);
}

TEST(config_own_keys)
{
	sbx_error_t err = NULL;
	struct sbx_config *cfg = parse("{\"registry_mirrors\":{\"docker.io\":\"http://127.0.0.1:5000\"},"
				       "\"registry_auth\":{\"ghcr.io\":{\"username\":\"u\",\"password\":\"p\"}},"
				       "\"accel\":\"tcg\",\"krunfw_path\":\"/opt/libkrunfw.so.5\"}",
				       &err);
	CHECK(cfg != NULL);
	CHECK_INT(cfg->images.n_mirrors, 1);
	CHECK_STR(cfg->images.mirrors[0].host, "docker.io");
	CHECK_STR(cfg->images.mirrors[0].url, "http://127.0.0.1:5000");
	CHECK_INT(cfg->images.n_creds, 1);
	CHECK_STR(cfg->images.creds[0].host, "ghcr.io");
	CHECK_STR(cfg->images.creds[0].username, "u");
	CHECK_STR(cfg->images.creds[0].password, "p");
	CHECK_INT(cfg->accel, SBX_ACCEL_TCG);
	CHECK_STR(cfg->krunfw_path, "/opt/libkrunfw.so.5");
	sbx_config_free(cfg);
	cfg = parse("{\"tcg_cache_mb\":128,\"memory_budget_mb\":9000,\"scratch_disk_mb\":512,\"worker_disk_mb\":64,"
		    "\"template_cache_mb\":300}",
		    &err);
	CHECK(cfg != NULL);
	CHECK_INT(cfg->template_cache_mb, 300);
	CHECK_INT(cfg->scratch_disk_mb, 512);
	CHECK_INT(cfg->worker_disk_mb, 64);
	CHECK_INT(cfg->tcg_cache_mb, 128);
	CHECK_INT(sbx_config_tcg_cache_mib(cfg), 128);
	CHECK_INT(cfg->memory_budget_mb, 9000);
	sbx_config_free(cfg);
	cfg = parse("{\"warm_pool\":{\"python\":2,\"node\":0},\"warm_pool_max\":3,\"standby\":false}", &err);
	CHECK(cfg != NULL);
	CHECK_INT(cfg->n_warm_pool, 2);
	CHECK_INT(cfg->warm_pool_max, 3);
	CHECK(!cfg->standby);
	for (size_t i = 0; cfg != NULL && i < cfg->n_warm_pool; i++)
		CHECK_INT(cfg->warm_pool[i].count, strcmp(cfg->warm_pool[i].image, "python") == 0 ? 2 : 0);
	sbx_config_free(cfg);
	/* Only TCG has a translation cache to count. */
	cfg = parse("{\"tcg_cache_mb\":128,\"accel\":\"kvm\"}", &err);
	CHECK(cfg != NULL);
	CHECK_INT(sbx_config_tcg_cache_mib(cfg), 0);
	sbx_config_free(cfg);
	/* auto counts the cache until serve decides, then as decided. */
	cfg = parse("{\"tcg_cache_mb\":128}", &err);
	CHECK(cfg != NULL);
	CHECK_INT(sbx_config_tcg_cache_mib(cfg), 128);
	CHECK_INT(sbx_config_accel(cfg), SBX_ACCEL_AUTO);
	atomic_store(&cfg->accel_in_use->in_use, SBX_ACCEL_KVM);
	CHECK_INT(sbx_config_accel(cfg), SBX_ACCEL_KVM);
	CHECK_INT(sbx_config_tcg_cache_mib(cfg), 0);
	/* A VM that could not start under KVM moves the decision to TCG:
	 * from then on every VM counts its cache. */
	CHECK(sbx_accel_choice_fall_back(cfg->accel_in_use, "test"));
	CHECK_INT(sbx_config_accel(cfg), SBX_ACCEL_TCG);
	CHECK_INT(sbx_config_tcg_cache_mib(cfg), 128);
	sbx_config_free(cfg);
	cfg = parse("{\"jail\":\"required\",\"jail_uid_base\":500000}", &err);
	CHECK(cfg != NULL);
	CHECK_INT(cfg->jail, SBX_JAIL_REQUIRED);
	CHECK_INT(cfg->jail_uid_base, 500000);
	sbx_config_free(cfg);
	cfg = parse("{\"jail\":\"off\"}", &err);
	CHECK(cfg != NULL);
	CHECK_INT(cfg->jail, SBX_JAIL_OFF);
	sbx_config_free(cfg);
}

TEST(config_fatal_cases)
{
	CHECK(fails_with("{\"sandbox\":{\"auto_install\":true}}", "legacy wrapped shape detected: move fields from "
								      "`sandbox:` to the top level"));
	CHECK(fails_with("{\"custom_images\":{\"python\":\"evil/x:1\"}}",
			 "custom_images key 'python' shadows a built-in preset — rename it (presets: python, node)"));
	CHECK(fails_with("{\"custom_images\":{\"node\":\"evil/x:1\"}}", "shadows a built-in preset"));
	CHECK(fails_with("{\"custom_images\":{\"\":\"x/y:1\"}}", "custom_images key must not be empty"));
	CHECK(fails_with("{\"custom_images\":{\"a\":1}}", "custom_images.a"));
	CHECK(fails_with("{\"auto_install\":\"yes\"}", "auto_install"));
	CHECK(fails_with("{\"image_allowlist\":\"python\"}", "image_allowlist"));
	CHECK(fails_with("{\"image_allowlist\":[1]}", "image_allowlist"));
	CHECK(fails_with("{\"max_concurrent_sandboxes\":-1}", "max_concurrent_sandboxes"));
	CHECK(fails_with("{\"max_concurrent_sandboxes\":4294967296}", "max_concurrent_sandboxes"));
	CHECK(fails_with("{\"default_cpus\":1.5}", "default_cpus"));
	CHECK(fails_with("{\"default_memory_mb\":null}", "default_memory_mb"));
	CHECK(fails_with("{\"max_exec_timeout_ms\":\"50\"}", "max_exec_timeout_ms"));
	CHECK(fails_with("{\"default_idle_timeout_secs\":true}", "default_idle_timeout_secs"));
	CHECK(fails_with("{\"max_concurrent_exec_per_sandbox\":[]}", "max_concurrent_exec_per_sandbox"));
	CHECK(fails_with("{\"per_image_caps\":{\"python\":{\"max_cpus\":\"2\"}}}", "max_cpus"));
	CHECK(fails_with("{\"per_image_caps\":[]}", "per_image_caps"));
	CHECK(fails_with("{\"registry_mirrors\":{\"h\":5}}", "registry_mirrors.h"));
	CHECK(fails_with("{\"registry_auth\":{\"h\":{\"username\":\"u\"}}}", "password"));
	CHECK(fails_with("{\"accel\":\"hvf\"}", "accel"));
	CHECK(fails_with("{\"krunfw_path\":7}", "krunfw_path"));
	CHECK(fails_with("{\"warm_pool\":[\"python\"]}", "warm_pool"));
	CHECK(fails_with("{\"warm_pool\":{\"python\":-1}}", "image 'python'"));
	CHECK(fails_with("{\"warm_pool\":{\"\":1}}", "empty image name"));
	CHECK(fails_with("{\"warm_pool_max\":true}", "warm_pool_max"));
	CHECK(fails_with("{\"standby\":1}", "standby"));
	CHECK(fails_with("{\"template_cache_mb\":0}", "config key `template_cache_mb`: must be at least 1 (MiB)"));
	CHECK(fails_with("{\"template_cache_mb\":-5}", "template_cache_mb"));
	CHECK(fails_with("{\"template_cache_mb\":\"big\"}", "template_cache_mb"));
	CHECK(fails_with("{\"tcg_cache_mb\":0}", "config key `tcg_cache_mb`: must be 1..2048 (MiB), got 0"));
	CHECK(fails_with("{\"tcg_cache_mb\":4096}", "must be 1..2048 (MiB), got 4096"));
	CHECK(fails_with("{\"tcg_cache_mb\":\"64\"}", "tcg_cache_mb"));
	CHECK(fails_with("{\"jail\":\"maybe\"}",
			 "config key `jail`: expected \"auto\", \"required\" or \"off\", got 'maybe'"));
	CHECK(fails_with("{\"jail\":true}", "jail"));
	CHECK(fails_with("{\"jail_uid_base\":0}", "config key `jail_uid_base`: must be at least 1 (uid 0 is root)"));
	CHECK(fails_with("{\"jail_uid_base\":4294967295}", "jail_uid_base"));
	CHECK(fails_with("{\"memory_budget_mb\":0}", "config key `memory_budget_mb`: must be at least 1"));
	CHECK(fails_with("{\"memory_budget_mb\":-5}", "memory_budget_mb"));
	CHECK(fails_with("{\"scratch_disk_mb\":10}", "config key `scratch_disk_mb`: must be 64..1048576 (MiB), got 10"));
	CHECK(fails_with("{\"scratch_disk_mb\":true}", "scratch_disk_mb"));
	CHECK(fails_with("{\"worker_disk_mb\":63}", "config key `worker_disk_mb`: must be 64..1048576 (MiB), got 63"));
	CHECK(fails_with("{\"worker_disk_mb\":1048577}", "config key `worker_disk_mb`: must be 64..1048576 (MiB), got 1048577"));
	CHECK(fails_with("{\"worker_disk_mb\":\"4096\"}", "worker_disk_mb"));
	CHECK(fails_with("{\"krunfw_path\":\"/a\\u0000b\"}", "config key `krunfw_path`: the string holds a NUL byte"));
	CHECK(fails_with("[]", "list of 0 entries"));
	CHECK(fails_with("[{},{}]", "list of 2 entries"));
	CHECK(fails_with("[1]", "expected a map"));
	CHECK(fails_with("\"x\"", "expected a map"));
}

TEST(config_image_limits)
{
	sbx_error_t err = NULL;
	struct sbx_config *cfg = parse("{\"image_max_entries\":5000,\"image_max_mb\":64,\"image_max_blob_mb\":8}", &err);
	CHECK(cfg != NULL);
	CHECK(cfg->images.limits.max_entries == 5000);
	CHECK(cfg->images.limits.max_bytes == 64ull << 20);
	CHECK(cfg->images.limits.max_blob_bytes == 8ull << 20);
	sbx_config_free(cfg);
	CHECK(fails_with("{\"image_max_entries\":0}", "config key `image_max_entries`: must be 1..4294967295, got 0"));
	CHECK(fails_with("{\"image_max_mb\":-1}", "config key `image_max_mb`: must be 1..1073741824, got -1"));
	CHECK(fails_with("{\"image_max_mb\":1073741825}", "image_max_mb"));
	CHECK(fails_with("{\"image_max_blob_mb\":\"8\"}", "config key `image_max_blob_mb`: expected an integer"));
	CHECK(fails_with("{\"image_max_blob_mb\":1.5}", "image_max_blob_mb"));
}

TEST(config_credentials_never_in_errors)
{
	sbx_error_t err = NULL;
	json_t *v = json_loads("{\"registry_auth\":{\"h\":{\"username\":\"SECRETUSER\",\"password\":7}}}", 0, NULL);
	CHECK(sbx_config_parse(v, &err) == NULL);
	CHECK(strstr(sbx_error_msg(err), "SECRETUSER") == NULL);
	sbx_error_free(&err);
	json_decref(v);
}

TEST(catalog_order_presets_then_sorted_custom)
{
	sbx_error_t err = NULL;
	struct sbx_config *cfg = parse("{\"custom_images\":{\"b\":\"x/b:1\",\"a\":\"x/a:1\",\"B\":\"x/B:1\"}}", &err);
	CHECK(cfg != NULL);
	json_t *list = sbx_catalog_list(cfg);
	char *s = json_dumps(list, JSON_COMPACT);
	CHECK_STR(s, "{\"images\":[{\"name\":\"python\",\"oci_ref\":\"docker.io/iiidev/python:latest\",\"kind\":"
		     "\"preset\"},{\"name\":\"node\",\"oci_ref\":\"docker.io/iiidev/node:latest\",\"kind\":\"preset\"},"
		     "{\"name\":\"B\",\"oci_ref\":\"x/B:1\",\"kind\":\"custom\"},{\"name\":\"a\",\"oci_ref\":\"x/a:1\","
		     "\"kind\":\"custom\"},{\"name\":\"b\",\"oci_ref\":\"x/b:1\",\"kind\":\"custom\"}]}");
	free(s);
	json_decref(list);
	sbx_config_free(cfg);
}

TEST(catalog_resolve_needs_known_and_allowed)
{
	sbx_error_t err = NULL;
	struct sbx_config *cfg = parse("{\"image_allowlist\":[\"python\",\"mine\",\"ghost\"],"
				       "\"custom_images\":{\"mine\":\"x/mine:1\",\"other\":\"x/o:1\"}}",
				       &err);
	CHECK(cfg != NULL);
	CHECK_STR(sbx_catalog_resolve(cfg, "python", &err), "docker.io/iiidev/python:latest");
	CHECK_STR(sbx_catalog_resolve(cfg, "mine", &err), "x/mine:1");
	CHECK(err == NULL);
	const char *denied[] = { "node", "other", "ghost", "docker.io/iiidev/python:latest" };
	for (size_t i = 0; i < 4; i++) {
		CHECK(sbx_catalog_resolve(cfg, denied[i], &err) == NULL);
		CHECK_STR(err->scode, "S100");
		sbx_error_free(&err);
	}
	CHECK(sbx_catalog_resolve(cfg, "ghost", &err) == NULL);
	CHECK_STR(sbx_error_msg(err), "image 'ghost' not in catalog; valid presets are 'python' and 'node', or add a "
				      "custom image via worker config (see S100 docs)");
	sbx_error_free(&err);
	CHECK(sbx_catalog_resolve(cfg, "node", &err) == NULL);
	CHECK_STR(sbx_error_msg(err), "image 'node' not in image_allowlist (add it to the configuration's image_allowlist)");
	sbx_error_free(&err);
	sbx_config_free(cfg);
	cfg = parse("{\"image_alowlist\":[\"python\"]}", &err);
	CHECK(cfg != NULL);
	CHECK(sbx_catalog_resolve(cfg, "python", &err) == NULL);
	CHECK_STR(sbx_error_msg(err), "image 'python' not in image_allowlist: image_allowlist is empty: no image may be "
				      "created (add it to the configuration's image_allowlist)");
	sbx_error_free(&err);
	sbx_config_free(cfg);
}

/* What parsing `text` logs on stderr (the warnings), caught in a file. */
static char *parse_logging(const char *text)
{
	FILE *cap = tmpfile();
	if (cap == NULL)
		return NULL;
	fflush(stderr);
	int saved = dup(2);
	dup2(fileno(cap), 2);
	sbx_error_t err = NULL;
	struct sbx_config *cfg = parse(text, &err);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	sbx_config_free(cfg);
	sbx_error_free(&err);
	static char buf[4096];
	rewind(cap);
	size_t n = fread(buf, 1, sizeof(buf) - 1, cap);
	buf[n] = '\0';
	fclose(cap);
	return buf;
}

TEST(config_unknown_keys_warned_with_the_nearest)
{
	const char *log = parse_logging("{\"image_alowlist\": [\"python\"], \"colour\": 1}");
	CHECK(log != NULL);
	CHECK(strstr(log, "config: unknown key `image_alowlist` (did you mean `image_allowlist`?)") != NULL);
	CHECK(strstr(log, "config: unknown key `colour` (ignored)") != NULL);
	log = parse_logging("{\"per_image_caps\": {\"python\": {\"max_cpu\": 2}},"
			    " \"registry_auth\": {\"r.io\": {\"username\": \"u\", \"password\": \"p\", \"pasword\": \"x\"}},"
			    " \"auto_instal\": true}");
	CHECK(log != NULL);
	CHECK(strstr(log, "unknown key `per_image_caps.python.max_cpu` (did you mean `per_image_caps.python.max_cpus`?)"));
	CHECK(strstr(log, "unknown key `registry_auth.r.io.pasword` (did you mean `registry_auth.r.io.password`?)"));
	CHECK(strstr(log, "unknown key `auto_instal` (did you mean `auto_install`?)"));
	log = parse_logging("{\"image_allowlist\": [], \"network_policy\": {}, \"jail\": \"off\"}");
	CHECK(log != NULL);
	CHECK(strstr(log, "unknown key") == NULL);
	CHECK(fails_with("{\"network_policy\": {\"alow\": []}}", "unknown key `alow` (did you mean `allow`?)"));
}

TEST(config_key_names_come_from_the_parser)
{
	const char *names[SBX_CONFIG_MAX_KEYS];
	size_t n = sbx_config_key_names(names, SBX_CONFIG_MAX_KEYS);
	CHECK(n > 20 && n <= SBX_CONFIG_MAX_KEYS);
	/* Every name the list gives is one the parser takes without a warning. */
	for (size_t i = 0; i < n; i++) {
		char text[200];
		snprintf(text, sizeof(text), "{\"%s\": null}", names[i]);
		const char *log = parse_logging(text);
		CHECK(log != NULL && strstr(log, "unknown key") == NULL);
	}
}

TEST(config_publish_keys)
{
	sbx_error_t err = NULL;
	struct sbx_config *cfg = sbx_config_parse(NULL, &err);
	CHECK(cfg != NULL);
	CHECK_STR(cfg->publish.address, "127.0.0.1");
	CHECK_INT(cfg->publish.port_lo, 32768);
	CHECK_INT(cfg->publish.port_hi, 60999);
	CHECK_INT(cfg->publish.max_connections, 256);
	sbx_config_free(cfg);
	cfg = parse("{\"publish_address\":\"0.0.0.0\",\"publish_port_range\":[8000,8000],"
		    "\"publish_max_connections\":1024}", &err);
	CHECK(cfg != NULL);
	CHECK_STR(cfg->publish.address, "0.0.0.0");
	CHECK_INT(cfg->publish.addr, 0);
	CHECK_INT(cfg->publish.port_lo, 8000);
	CHECK_INT(cfg->publish.port_hi, 8000);
	CHECK_INT(cfg->publish.max_connections, 1024);
	sbx_config_free(cfg);
	static const char *const bad[][2] = {
		{ "{\"publish_address\":\"::1\"}", "`publish_address`" },
		{ "{\"publish_address\":\"localhost\"}", "`publish_address`" },
		{ "{\"publish_address\":2130706433}", "`publish_address`" },
		{ "{\"publish_port_range\":[2,1]}", "`publish_port_range`" },
		{ "{\"publish_port_range\":[0,5]}", "`publish_port_range`" },
		{ "{\"publish_port_range\":[1,65536]}", "`publish_port_range`" },
		{ "{\"publish_port_range\":[1]}", "`publish_port_range`" },
		{ "{\"publish_max_connections\":0}", "`publish_max_connections`" },
		{ "{\"publish_max_connections\":1025}", "`publish_max_connections`" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(fails_with(bad[i][0], bad[i][1]));
	sbx_error_free(&err);
}

