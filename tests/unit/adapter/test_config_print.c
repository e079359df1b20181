#include <stdlib.h>
#include <string.h>

#include "adapter/config/config.h"
#include "adapter/config/config_print.h"
#include "harness.h"

static json_t *effective(const char *text)
{
	json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
	sbx_error_t err = NULL;
	struct sbx_config *cfg = sbx_config_parse(v, &err);
	json_decref(v);
	json_t *out = cfg != NULL ? sbx_config_to_json(cfg, &err) : NULL;
	sbx_config_free(cfg);
	sbx_error_free(&err);
	return out;
}

static const char *str(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static long long num(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

TEST(config_print_names_every_key_the_parser_reads)
{
	json_t *out = effective("null");
	CHECK(out != NULL);
	const char *names[SBX_CONFIG_MAX_KEYS];
	size_t n = sbx_config_key_names(names, SBX_CONFIG_MAX_KEYS);
	for (size_t i = 0; i < n; i++) {
		if (json_object_get(out, names[i]) == NULL)
			sbx_test_fail(__FILE__, __LINE__, "key %s not printed", names[i]);
	}
	CHECK_INT(json_object_size(out), n);
	json_decref(out);
}

TEST(config_print_defaults_filled_in)
{
	json_t *out = effective("{}");
	CHECK(out != NULL);
	CHECK(json_is_true(json_object_get(out, "auto_install")));
	CHECK_INT(json_array_size(json_object_get(out, "image_allowlist")), 0);
	CHECK_INT(num(out, "default_idle_timeout_secs"), 300);
	CHECK_INT(num(out, "max_concurrent_sandboxes"), 32);
	CHECK_INT(num(out, "default_memory_mb"), 512);
	CHECK_INT(num(out, "image_max_mb"), 32768);
	CHECK_INT(num(out, "scratch_disk_mb"), 2048);
	CHECK_STR(str(out, "accel"), "auto");
	CHECK_STR(str(out, "jail"), "auto");
	CHECK(json_is_null(json_object_get(out, "memory_budget_mb")));
	CHECK(json_is_null(json_object_get(out, "krunfw_path")));
	CHECK(json_is_null(json_object_get(json_object_get(out, "network_policy"), "dns_servers")));
	json_decref(out);
}

TEST(config_print_shows_what_was_set)
{
	json_t *out = effective("{\"image_allowlist\": [\"python\", \"pg\"], \"custom_images\": {\"pg\": \"x/pg:17\"},"
				" \"max_concurrent_exec_per_sandbox\": 0, \"accel\": \"tcg\", \"memory_budget_mb\": 3000,"
				" \"per_image_caps\": {\"pg\": {\"max_cpus\": 2}}, \"warm_pool\": {\"python\": 1},"
				" \"registry_auth\": {\"r.io\": {\"username\": \"${U}\", \"password\": \"s3cret\"}},"
				" \"network_policy\": {\"allow\": [\"*.debian.org:443\"], \"host_ports\": [8080],"
				" \"dns_servers\": [\"9.9.9.9\", \"1.1.1.1:5353\"]}, \"jail\": \"off\", \"krunfw_path\": \"/k\"}");
	CHECK(out != NULL);
	char *text = json_dumps(out, JSON_COMPACT);
	CHECK(text != NULL);
	CHECK(strstr(text, "s3cret") == NULL);
	CHECK(strstr(text, "\"image_allowlist\":[\"python\",\"pg\"]") != NULL);
	CHECK(strstr(text, "\"custom_images\":{\"pg\":\"x/pg:17\"}") != NULL);
	CHECK(strstr(text, "\"registry_auth\":{\"r.io\":{\"username\":\"${U}\",\"password\":\"<hidden>\"}}") != NULL);
	CHECK(strstr(text, "\"per_image_caps\":{\"pg\":{\"max_cpus\":2,\"max_memory_mb\":0}}") != NULL);
	CHECK(strstr(text, "\"warm_pool\":{\"python\":1}") != NULL);
	CHECK(strstr(text, "\"network_policy\":{\"allow\":[\"*.debian.org:443\"],\"deny\":[],\"host_ports\":[8080],"
			   "\"dns_servers\":[\"9.9.9.9:53\",\"1.1.1.1:5353\"]}") != NULL);
	free(text);
	CHECK_INT(num(out, "max_concurrent_exec_per_sandbox"), 1); /* 0 means 1 */
	CHECK_INT(num(out, "memory_budget_mb"), 3000);
	CHECK_STR(str(out, "accel"), "tcg");
	CHECK_STR(str(out, "jail"), "off");
	CHECK_STR(str(out, "krunfw_path"), "/k");
	json_decref(out);
}
