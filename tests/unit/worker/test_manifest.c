/* iii.worker.yaml: a full manifest, the ignored sections, and hostile or
 * wrong ones refused with S503 naming the key. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/scodes.h"
#include "common/strv.h"
#include "harness.h"
#include "worker/worker_manifest.h"

static const char *full =
	"name: demo\n"
	"description: a demo worker\n"
	"runtime:\n"
	"  base_image: node\n"
	"scripts:\n"
	"  setup: apt-get update\n"
	"  install: npm ci\n"
	"  start: node main.js\n"
	"env:\n"
	"  NODE_VERSION: 20.10\n"
	"  DEBUG: true\n"
	"  EMPTY:\n"
	"resources:\n"
	"  cpus: 3\n"
	"  memory: 1Gi\n"
	"iii:\n"
	"  anything: [goes, {here: 1}]\n"
	"deploy: {replicas: 2}\n"
	"manifest: 1\n"
	"tags: [a, b]\n"
	"dependencies:\n"
	"  other: ^1.0\n";

TEST(full_manifest)
{
	sbx_error_t err = NULL;
	struct worker_manifest m;
	CHECK_INT(worker_manifest_parse(full, strlen(full), false, &m, &err), 0);
	CHECK_STR(m.name, "demo");
	CHECK_STR(m.description, "a demo worker");
	CHECK_STR(m.base_image, "node");
	CHECK_STR(m.setup, "apt-get update");
	CHECK_STR(m.install, "npm ci");
	CHECK_STR(m.start, "node main.js");
	CHECK_INT(sbx_strv_len(m.env), 3);
	CHECK_STR(m.env[0], "NODE_VERSION=20.10");
	CHECK_STR(m.env[1], "DEBUG=true");
	CHECK_STR(m.env[2], "EMPTY=");
	CHECK_INT(m.resources.cpus, 3);
	CHECK_INT(m.resources.memory_mb, 1024);
	worker_manifest_free(&m);
}

TEST(minimal_manifest_has_an_empty_env)
{
	sbx_error_t err = NULL;
	struct worker_manifest m;
	const char *text = "name: x\ndescription:\n";
	CHECK_INT(worker_manifest_parse(text, strlen(text), true, &m, &err), 0);
	CHECK(m.env != NULL && m.env[0] == NULL);
	CHECK(m.description == NULL && m.base_image == NULL && m.start == NULL);
	CHECK_INT(m.resources.cpus, 0);
	worker_manifest_free(&m);
}

static void expect_s503(const char *text, bool bundle, const char *want)
{
	sbx_error_t err = NULL;
	struct worker_manifest m;
	if (worker_manifest_parse(text, strlen(text), bundle, &m, &err) != -1) {
		sbx_test_fail(__FILE__, __LINE__, "accepted: %s", text);
		worker_manifest_free(&m);
		return;
	}
	if (strcmp(err->scode, SBX_S_MANIFEST) != 0 || strcmp(sbx_error_msg(err), want) != 0)
		sbx_test_fail(__FILE__, __LINE__, "%s \"%s\", expected \"%s\"", err->scode, sbx_error_msg(err), want);
	sbx_error_free(&err);
}

TEST(refusals_name_the_key)
{
	expect_s503("foo: 1\n", false, "iii.worker.yaml: unknown key `foo`");
	expect_s503("runtime: {base_image: node, foo: 1}\n", false, "iii.worker.yaml: unknown key `runtime.foo`");
	expect_s503("scripts: {start: x, bar: y}\n", false, "iii.worker.yaml: unknown key `scripts.bar`");
	expect_s503("name: [a]\n", false, "iii.worker.yaml: `name` must be a string, not a list");
	expect_s503("name: 5\n", false, "iii.worker.yaml: `name` must be a string, not an integer");
	expect_s503("scripts: start\n", false, "iii.worker.yaml: `scripts` must be a map, not a string");
	expect_s503("scripts: {start: {a: 1}}\n", false, "iii.worker.yaml: `scripts.start` must be a string, not a map");
	expect_s503("env: [A=1]\n", false, "iii.worker.yaml: `env` must be a map of names to values, not a list");
	expect_s503("env: {A: [1]}\n", false, "iii.worker.yaml: `env.A` must be a scalar, not a list");
	expect_s503("env: {9A: 1}\n", false, "iii.worker.yaml: `env.9A` is not a valid variable name");
	expect_s503("resources: {cpus: lots}\n", false,
		    "iii.worker.yaml: `resources.cpus` must be a number of CPUs (2, 1.5, \"500m\"), not a string");
	expect_s503("resources: {disk: 1}\n", false, "iii.worker.yaml: unknown key `resources.disk`");
	expect_s503("[1, 2]\n", false, "iii.worker.yaml: the top level must be a map, not a list");
	expect_s503("", false, "iii.worker.yaml: the top level must be a map, not null");
	expect_s503("name: a\nname: b\n", false, "iii.worker.yaml: duplicate key at `name` (line 2)");
	expect_s503("a: &x 1\nname: *x\n", false, "iii.worker.yaml: aliases (*name) are not supported at `name` (line 2)");
}

TEST(bundle_rules)
{
	expect_s503("scripts: {install: npm ci}\n", true,
		    "iii.worker.yaml: `scripts.install` is not allowed in a bundle (package://) manifest");
	expect_s503("scripts: {setup: x}\n", true,
		    "iii.worker.yaml: `scripts.setup` is not allowed in a bundle (package://) manifest");
	expect_s503("runtime: {base_image: node}\n", true,
		    "iii.worker.yaml: `runtime.base_image` is not allowed in a bundle (package://) manifest");
	sbx_error_t err = NULL;
	struct worker_manifest m;
	const char *ok = "scripts: {start: node index.js}\nresources: {cpus: 8}\n";
	CHECK_INT(worker_manifest_parse(ok, strlen(ok), true, &m, &err), 0);
	worker_manifest_free(&m);
}

TEST(size_cap)
{
	size_t n = WORKER_MANIFEST_MAX + 1;
	char *big = malloc(n + 1);
	CHECK(big != NULL);
	memset(big, '#', n);
	big[n] = '\0';
	expect_s503(big, false, "iii.worker.yaml: larger than 64 KiB");
	/* Exactly 64 KiB of comment before a valid key is fine. */
	memcpy(big + WORKER_MANIFEST_MAX - 8, "\nname: x", 8);
	sbx_error_t err = NULL;
	struct worker_manifest m;
	CHECK_INT(worker_manifest_parse(big, WORKER_MANIFEST_MAX, false, &m, &err), 0);
	CHECK_STR(m.name, "x");
	worker_manifest_free(&m);
	free(big);
}

static char dir[64];

__attribute__((destructor)) static void remove_dir(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (dir[0] != '\0' && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

TEST(load_from_a_directory)
{
	snprintf(dir, sizeof(dir), "/tmp/sbx-manifest.XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	sbx_error_t err = NULL;
	struct worker_manifest m;
	int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	CHECK(dfd >= 0);
	CHECK_INT(worker_manifest_load(dfd, dir, false, &m, &err), -1);
	CHECK_STR(err->scode, SBX_S_MANIFEST);
	CHECK(strstr(sbx_error_msg(err), "iii.worker.yaml: not found in ") != NULL);
	sbx_error_free(&err);
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/iii.worker.yaml", dir);
	CHECK_INT(symlink("/etc/passwd", path), 0);
	CHECK_INT(worker_manifest_load(dfd, dir, false, &m, &err), -1);
	CHECK_STR(sbx_error_msg(err), "iii.worker.yaml: is a symlink; it must be a regular file");
	sbx_error_free(&err);
	CHECK_INT(unlink(path), 0);
	CHECK_INT(mkfifo(path, 0600), 0);
	CHECK_INT(worker_manifest_load(dfd, dir, false, &m, &err), -1);
	CHECK_STR(sbx_error_msg(err), "iii.worker.yaml: not a regular file");
	sbx_error_free(&err);
	CHECK_INT(unlink(path), 0);
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	fputs(full, f);
	/* 65 KiB in total: refused, having read no more than the cap and one byte. */
	for (int i = 0; i < 65 * 1024 / 8; i++)
		fputs("#abcdef\n", f);
	fclose(f);
	CHECK_INT(worker_manifest_load(dfd, dir, false, &m, &err), -1);
	CHECK_STR(sbx_error_msg(err), "iii.worker.yaml: larger than 64 KiB");
	sbx_error_free(&err);
	CHECK_INT(truncate(path, (off_t)strlen(full)), 0);
	CHECK_INT(worker_manifest_load(dfd, dir, false, &m, &err), 0);
	CHECK_STR(m.start, "node main.js");
	worker_manifest_free(&m);
	close(dfd);
}
