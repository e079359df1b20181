/* The parsers of the image store's configuration keys (the adapter's
 * config.c calls them; tests/unit/adapter/test_config.c covers the whole). */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#include "image/image_config.h"
#include "image/oci_registry.h"
#include "image/oci_registry_http.h"

/* Parses `text` as the value of `key` into a fresh config; returns the
 * parser's answer and leaves the error, if any, in *err. */
static int parse(struct sbx_image_config *c, const char *key, const char *text, sbx_error_t *err)
{
	sbx_image_config_init(c);
	json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (v == NULL)
		abort();
	int rc = sbx_image_config_parse_key(c, key, v, err);
	json_decref(v);
	return rc;
}

/* The key fails, and the message contains `needle`. */
static int fails_with(const char *key, const char *text, const char *needle)
{
	struct sbx_image_config c;
	sbx_error_t err = NULL;
	int rc = parse(&c, key, text, &err);
	int ok = rc == -1 && err != NULL && strstr(sbx_error_msg(err), needle) != NULL;
	sbx_error_free(&err);
	sbx_image_config_free(&c);
	return ok;
}

TEST(other_keys_are_not_read)
{
	struct sbx_image_config c;
	sbx_error_t err = NULL;
	CHECK_INT(parse(&c, "accel", "\"tcg\"", &err), 0);
	CHECK_INT(parse(&c, "image_allowlist", "7", &err), 0);
	CHECK(err == NULL);
	CHECK(c.auto_install);
	CHECK_INT(c.n_mirrors + c.n_creds + c.n_custom, 0);
}

TEST(the_four_keys)
{
	struct sbx_image_config c;
	sbx_error_t err = NULL;
	CHECK_INT(parse(&c, "auto_install", "false", &err), 1);
	CHECK(!c.auto_install);
	sbx_image_config_free(&c);

	json_t *v = json_loads("{\"registry_mirrors\": {\"docker.io\": \"http://127.0.0.1:5000\"},"
			       " \"registry_auth\": {\"ghcr.io:443\": {\"username\": \"u\", \"password\": \"${P}\"}},"
			       " \"custom_images\": {\"pg\": \"postgres:17\", \"B\": \"x/b:1\", \"a\": \"x/a:1\"}}",
			       0, NULL);
	const char *k;
	json_t *item;
	json_object_foreach(v, k, item) CHECK_INT(sbx_image_config_parse_key(&c, k, item, &err), 1);
	json_decref(v);
	CHECK_STR(sbx_image_config_mirror(&c, "docker.io"), "http://127.0.0.1:5000");
	CHECK(sbx_image_config_mirror(&c, "ghcr.io") == NULL);
	const struct sbx_oci_registry_cred *cred = sbx_image_config_cred(&c, "ghcr.io:443");
	CHECK(cred != NULL);
	CHECK_STR(cred->username, "u");
	CHECK_STR(cred->password, "${P}");
	CHECK_INT(c.n_custom, 3);
	CHECK_STR(c.custom[0].name, "B");
	CHECK_STR(c.custom[1].name, "a");
	CHECK_STR(c.custom[2].name, "pg");
	CHECK_STR(sbx_image_catalog_ref(&c, "pg"), "postgres:17");
	CHECK_STR(sbx_image_catalog_ref(&c, "python"), "docker.io/iiidev/python:latest");
	CHECK(sbx_image_catalog_ref(&c, "nope") == NULL);
	sbx_image_config_free(&c);
	CHECK_INT(c.n_custom, 0);
	CHECK(c.auto_install);
}

TEST(presets)
{
	size_t n;
	const struct sbx_image_preset *p = sbx_image_presets(&n);
	CHECK_INT(n, 2);
	CHECK_STR(p[0].name, "python");
	CHECK_STR(p[1].name, "node");
	CHECK_STR(sbx_image_preset_ref("node"), "docker.io/iiidev/node:latest");
	CHECK(sbx_image_preset_ref("pg") == NULL);
}

TEST(bad_values_fail_closed_naming_the_key)
{
	CHECK(fails_with("auto_install", "\"yes\"", "config key `auto_install`: expected a boolean, got a string"));
	CHECK(fails_with("registry_mirrors", "[]", "config key `registry_mirrors`: expected a map of strings, got a list"));
	CHECK(fails_with("registry_mirrors", "{\"h\": 5}", "config key `registry_mirrors.h`: expected a string, got an integer"));
	CHECK(fails_with("registry_mirrors", "{\"h\": \"a\\u0000b\"}", "NUL byte"));
	CHECK(fails_with("registry_auth", "{\"h\": \"u:p\"}", "config key `registry_auth.h`: expected a map, got a string"));
	CHECK(fails_with("registry_auth", "{\"h\": {\"username\": \"u\"}}",
			 "registry 'h': config key `registry_auth.*.password`: expected a string, got nothing"));
	CHECK(fails_with("custom_images", "{\"a\": 1}", "config key `custom_images.a`: expected a string, got an integer"));
	CHECK(fails_with("custom_images", "{\"\": \"x/y:1\"}", "custom_images key must not be empty"));
	CHECK(fails_with("custom_images", "{\"node\": \"evil/x:1\"}",
			 "custom_images key 'node' shadows a built-in preset — rename it (presets: python, node)"));
	CHECK(fails_with("custom_images", "null", "expected a map of strings, got null"));
}

TEST(credentials_never_in_messages)
{
	struct sbx_image_config c;
	sbx_error_t err = NULL;
	CHECK_INT(parse(&c, "registry_auth", "{\"h\": {\"username\": \"SECRETUSER\", \"password\": 7}}", &err), -1);
	CHECK(strstr(sbx_error_msg(err), "SECRETUSER") == NULL);
	CHECK(strstr(sbx_error_msg(err), "password") != NULL);
	sbx_error_free(&err);
	sbx_image_config_free(&c);
	CHECK_INT(parse(&c, "registry_auth", "{\"h\": {\"username\": 7, \"password\": \"SECRETPW\"}}", &err), -1);
	CHECK(strstr(sbx_error_msg(err), "SECRETPW") == NULL);
	sbx_error_free(&err);
	sbx_image_config_free(&c);
}

/* Plain http only to loopback: an IPv4 literal in 127/8, localhost, ::1;
 * never a name that merely starts with "127.". */
TEST(plain_http_only_to_loopback)
{
	static const char *const ok[] = { "http://127.0.0.1:5000/v2/", "http://127.1.2.3/token", "http://LOCALHOST:1/",
					  "http://[::1]:5000/", "https://registry.example.com/token", NULL };
	static const char *const refused[] = { "http://127.0.0.1.example.com/token", "http://127.evil/",
					       "http://registry.example.com/", "http://128.0.0.1/", "ftp://127.0.0.1/",
					       NULL };
	sbx_error_t err = NULL;
	for (size_t i = 0; ok[i] != NULL; i++) {
		CHECK_INT(sbx_url_check_transport(ok[i], &err), 0);
		sbx_error_free(&err);
	}
	for (size_t i = 0; refused[i] != NULL; i++) {
		CHECK_INT(sbx_url_check_transport(refused[i], &err), -1);
		CHECK(err != NULL && strstr(sbx_error_msg(err), "only https://") != NULL);
		sbx_error_free(&err);
	}
}
