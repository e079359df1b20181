/* The loaders of --config files (JSON; YAML for serve), and `image
 * --config FILE` using one: a file serve's parser refuses is refused with
 * the same message, exit 2. */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "adapter/config/config_file.h"
#include "cmd/cmd_image.h"
#include "harness.h"

static char dir[] = "/tmp/sbx-config-file-XXXXXX";

/* Writes `text` to a file in the test directory; returns its path. */
static const char *write_file(const char *name, const char *text)
{
	static char path[128];
	/* Not "still ends in X": mkdtemp's own last letter is an X one time in
	 * 62, and a second mkdtemp on the name then fails. */
	static bool made;
	if (!made && mkdtemp(dir) == NULL)
		abort();
	made = true;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "we");
	if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0)
		abort();
	return path;
}

/* Loading `text` fails with a message that starts with the file's path and
 * contains `needle`. */
static int load_fails_with(const char *text, const char *needle)
{
	const char *path = write_file("bad.json", text);
	sbx_error_t err = NULL;
	struct sbx_config *cfg = sbx_config_load_file(path, &err);
	int ok = cfg == NULL && err != NULL && strncmp(sbx_error_msg(err), path, strlen(path)) == 0 &&
		 strstr(sbx_error_msg(err), needle) != NULL;
	if (!ok)
		fprintf(stderr, "# got: %s\n", err != NULL ? sbx_error_msg(err) : "(success)");
	sbx_config_free(cfg);
	sbx_error_free(&err);
	return ok;
}

TEST(load_reads_every_key_with_the_engine_parser)
{
	const char *path = write_file("good.json", "[{\"auto_install\": false, \"accel\": \"tcg\",\n"
						   " \"registry_mirrors\": {\"docker.io\": \"http://127.0.0.1:5000\"},\n"
						   " \"custom_images\": {\"pg\": \"postgres:17\"}}]\n");
	sbx_error_t err = NULL;
	struct sbx_config *cfg = sbx_config_load_file(path, &err);
	CHECK(cfg != NULL);
	CHECK(!cfg->images.auto_install);
	CHECK_INT(cfg->accel, SBX_ACCEL_TCG);
	CHECK_STR(sbx_image_config_mirror(&cfg->images, "docker.io"), "http://127.0.0.1:5000");
	CHECK_STR(sbx_image_catalog_ref(&cfg->images, "pg"), "postgres:17");
	sbx_config_free(cfg);
	path = write_file("null.json", "null");
	cfg = sbx_config_load_file(path, &err);
	CHECK(cfg != NULL);
	CHECK_INT(cfg->max_concurrent_sandboxes, 32);
	sbx_config_free(cfg);
}

TEST(load_fails_closed)
{
	CHECK(load_fails_with("{\"auto_install\": \"yes\"}", ": config key `auto_install`: expected a boolean, got a string"));
	CHECK(load_fails_with("{\"accel\": \"hvf\"}", "config key `accel`"));
	CHECK(load_fails_with("{\"sandbox\": {}}", "legacy wrapped shape detected"));
	CHECK(load_fails_with("42", "config: expected a map or a list holding one map, got an integer"));
	CHECK(load_fails_with("{\"a\": 1,\n \"a\": 2}", "duplicate"));
	CHECK(load_fails_with("{\"auto_install\": tru", "(line 1)"));
	CHECK(load_fails_with("", "(line"));
	sbx_error_t err = NULL;
	CHECK(sbx_config_load_file("/nonexistent/sbx.json", &err) == NULL);
	CHECK(strstr(sbx_error_msg(err), "/nonexistent/sbx.json: No such file or directory") != NULL);
	sbx_error_free(&err);
}

TEST(yaml_file_is_read_with_the_engine_parser)
{
	const char *path = write_file("good.yaml", "# the engine's --config file\n"
						   "auto_install: false\n"
						   "image_allowlist: [node]\n"
						   "registry_mirrors:\n"
						   "  docker.io: http://127.0.0.1:5000\n"
						   "worker_disk_mb: 128\n");
	sbx_error_t err = NULL;
	struct sbx_config *cfg = sbx_config_load_yaml_file(path, &err);
	CHECK(cfg != NULL);
	CHECK(!cfg->images.auto_install);
	CHECK(sbx_config_allows(cfg, "node"));
	CHECK_STR(sbx_image_config_mirror(&cfg->images, "docker.io"), "http://127.0.0.1:5000");
	CHECK_INT(cfg->worker_disk_mb, 128);
	sbx_config_free(cfg);
	cfg = sbx_config_load_yaml_file(write_file("list.yaml", "- default_cpus: 2\n"), &err);
	CHECK(cfg != NULL);
	CHECK_INT(cfg->default_cpus, 2);
	sbx_config_free(cfg);
	cfg = sbx_config_load_yaml_file(write_file("empty.yaml", ""), &err);
	CHECK(cfg != NULL);
	CHECK_INT(cfg->max_concurrent_sandboxes, 32);
	sbx_config_free(cfg);
}

static int yaml_fails_with(const char *text, const char *needle)
{
	const char *path = write_file("bad.yaml", text);
	sbx_error_t err = NULL;
	struct sbx_config *cfg = sbx_config_load_yaml_file(path, &err);
	int ok = cfg == NULL && err != NULL && strncmp(sbx_error_msg(err), path, strlen(path)) == 0 &&
		 strstr(sbx_error_msg(err), needle) != NULL;
	if (!ok)
		fprintf(stderr, "# got: %s\n", err != NULL ? sbx_error_msg(err) : "(success)");
	sbx_config_free(cfg);
	sbx_error_free(&err);
	return ok;
}

TEST(yaml_file_fails_closed)
{
	CHECK(yaml_fails_with("auto_install: yes\n", "config key `auto_install`: expected a boolean, got a string"));
	CHECK(yaml_fails_with("sandbox: {}\n", "legacy wrapped shape detected"));
	CHECK(yaml_fails_with("a: 1\na: 2\n", "duplicate key at `a`"));
	CHECK(yaml_fails_with("a: &x 1\nb: *x\n", "aliases"));
	CHECK(yaml_fails_with("a: [\n", "YAML syntax"));
	CHECK(yaml_fails_with("42\n", "expected a map or a list holding one map"));
}

TEST(load_refuses_a_file_over_the_cap)
{
	size_t n = SBX_CONFIG_FILE_MAX + 1;
	char *big = malloc(n + 1);
	CHECK(big != NULL);
	memset(big, ' ', n);
	big[0] = '{';
	big[n - 1] = '}';
	big[n] = '\0';
	int ok = load_fails_with(big, "larger than 1048576 bytes");
	big[n - 1] = '\0'; /* exactly at the cap: bad JSON (no closing brace), not too large */
	int at_cap = load_fails_with(big, "(line 1)");
	free(big);
	CHECK(ok);
	CHECK(at_cap);
}

/* Runs `image --config PATH ls`, capturing stderr into `out`. */
static int run_image(const char *path, char *out, size_t size)
{
	char *argv[] = { "image", "--config", (char *)path, "ls", NULL };
	char cap[160];
	snprintf(cap, sizeof(cap), "%s/stderr", dir);
	fflush(stderr);
	int saved = dup(2), fd = open(cap, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (saved < 0 || fd < 0 || dup2(fd, 2) < 0)
		abort();
	close(fd);
	int rc = sbx_cmd_image(4, argv);
	fflush(stderr);
	if (dup2(saved, 2) < 0)
		abort();
	close(saved);
	FILE *f = fopen(cap, "re");
	size_t n = f != NULL ? fread(out, 1, size - 1, f) : 0;
	out[n] = '\0';
	if (f != NULL)
		fclose(f);
	return rc;
}

TEST(image_config_bad_file_exits_2_with_the_parser_message)
{
	char state[160], out[4096];
	write_file("x", "");
	snprintf(state, sizeof(state), "%s/state", dir);
	setenv("III_SANDBOX_STATE_DIR", state, 1);
	const struct {
		const char *text, *message;
	} bad[] = {
		{ "{\"auto_install\": \"yes\"}", "config key `auto_install`: expected a boolean, got a string" },
		{ "{\"registry_mirrors\": {\"docker.io\": 5}}",
		  "config key `registry_mirrors.docker.io`: expected a string, got an integer" },
		{ "{\"custom_images\": {\"python\": \"evil/x:1\"}}", "shadows a built-in preset" },
		/* Not an image key: refused all the same, as serve would. */
		{ "{\"default_cpus\": -1}", "config key `default_cpus`: expected an unsigned 32-bit integer" },
		{ "{\"sandbox\": {\"auto_install\": true}}", "legacy wrapped shape detected" },
		{ "[{}, {}]", "got a list of 2 entries" },
		{ "{not json", "(line 1)" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *path = write_file("bad.json", bad[i].text);
		CHECK_INT(run_image(path, out, sizeof(out)), 2);
		char want[256];
		snprintf(want, sizeof(want), "sandbox-libkrun image: %s: ", path);
		CHECK(strncmp(out, want, strlen(want)) == 0);
		CHECK(strstr(out, bad[i].message) != NULL);
	}
	CHECK_INT(run_image("/nonexistent/sbx.json", out, sizeof(out)), 2);
	CHECK(strstr(out, "/nonexistent/sbx.json: No such file or directory") != NULL);
	const char *good = write_file("good.json", "{\"custom_images\": {\"pg\": \"postgres:17\"}, \"accel\": \"tcg\"}");
	CHECK_INT(run_image(good, out, sizeof(out)), 0);
	CHECK_STR(out, "");
	/* serve --config's YAML file works here too, checked the same way. */
	const char *yaml = write_file("serve.yaml", "custom_images:\n  pg: postgres:17\naccel: tcg\n");
	CHECK_INT(run_image(yaml, out, sizeof(out)), 0);
	CHECK_STR(out, "");
	yaml = write_file("bad.yaml", "accel: tcg\ndefault_cpus: -1\n");
	CHECK_INT(run_image(yaml, out, sizeof(out)), 2);
	CHECK(strstr(out, "config key `default_cpus`: expected an unsigned 32-bit integer") != NULL);
}

TEST(cleanup)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK_INT(system(cmd), 0);
}
