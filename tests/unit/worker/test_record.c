/* worker_record: names, the directory, a round trip through worker.json,
 * atomic replacement, and refusal of records that do not fit. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/scodes.h"
#include "common/strv.h"
#include "harness.h"
#include "worker/worker_record_file.h"

static char state[64];

static void remove_state(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", state);
	if (state[0] != '\0' && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", state);
}

__attribute__((destructor)) static void remove_last_state(void)
{
	remove_state();
}

/* A fresh state directory for each test (the previous one removed). */
static void fresh_state(void)
{
	remove_state();
	snprintf(state, sizeof(state), "/tmp/sbx-worker-rec.XXXXXX");
	if (mkdtemp(state) == NULL)
		abort();
	setenv("III_SANDBOX_STATE_DIR", state, 1);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0)
		abort();
}

static void sample(struct worker_record *r)
{
	static char *env[] = { "A=1", "B=two words", NULL };
	static char *image_env[] = { "PATH=/usr/bin", NULL };
	static char *exec[] = { "node", "main.js", NULL };
	*r = (struct worker_record){
		.worker = "demo-1.x",
		.source = WORKER_SOURCE_PACKAGE,
		.host_path = "/p/pkg",
		.base_image = "docker.io/library/node:20",
		.image_erofs = "/s/images/erofs/abc.erofs",
		.cpus = 2,
		.memory_mb = 2048,
		.env = env,
		.start = "node main.js",
		.exec = exec,
		.image_env = image_env,
		.image_workdir = "/app",
	};
}

TEST(names_accepted_and_refused)
{
	sbx_error_t err = NULL;
	CHECK_INT(worker_name_check("a", &err), 0);
	CHECK_INT(worker_name_check("My_worker-1.2", &err), 0);
	char long_ok[WORKER_NAME_MAX + 1], too_long[WORKER_NAME_MAX + 2];
	memset(long_ok, 'x', WORKER_NAME_MAX);
	long_ok[WORKER_NAME_MAX] = '\0';
	memset(too_long, 'x', WORKER_NAME_MAX + 1);
	too_long[WORKER_NAME_MAX + 1] = '\0';
	CHECK_INT(worker_name_check(long_ok, &err), 0);
	const char *bad[] = { "", ".", "..", "a/b", "../x", "a b", "ä", too_long, "x\n" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_INT(worker_name_check(bad[i], &err), -1);
		CHECK_STR(err->scode, SBX_S_INVALID_REQUEST);
		sbx_error_free(&err);
	}
}

TEST(dir_is_under_state_workers)
{
	fresh_state();
	sbx_error_t err = NULL;
	char buf[PATH_MAX], want[PATH_MAX];
	CHECK_INT(worker_dir("w1", buf, sizeof(buf), &err), 0);
	snprintf(want, sizeof(want), "%s/workers/w1", state);
	CHECK_STR(buf, want);
	CHECK_INT(worker_dir("../w1", buf, sizeof(buf), &err), -1);
	sbx_error_free(&err);
	char small[8];
	CHECK_INT(worker_dir("w1", small, sizeof(small), &err), -1);
	CHECK_INT(err->errnum, ENAMETOOLONG);
	sbx_error_free(&err);
}

TEST(never_prepared_is_enoent)
{
	fresh_state();
	sbx_error_t err = NULL;
	struct worker_record r;
	CHECK_INT(worker_record_load("nobody", &r, &err), -1);
	CHECK_INT(err->errnum, ENOENT);
	sbx_error_free(&err);
}

TEST(round_trip_keeps_every_field)
{
	fresh_state();
	sbx_error_t err = NULL;
	struct worker_record in, out;
	sample(&in);
	CHECK_INT(worker_record_save(&in, &err), 0);
	CHECK_INT(worker_record_load("demo-1.x", &out, &err), 0);
	CHECK_STR(out.worker, "demo-1.x");
	CHECK_INT(out.source, WORKER_SOURCE_PACKAGE);
	CHECK_STR(out.host_path, "/p/pkg");
	CHECK_STR(out.base_image, "docker.io/library/node:20");
	CHECK_STR(out.image_erofs, "/s/images/erofs/abc.erofs");
	CHECK_INT(out.cpus, 2);
	CHECK_INT(out.memory_mb, 2048);
	CHECK_INT(sbx_strv_len(out.env), 2);
	CHECK_STR(out.env[1], "B=two words");
	CHECK(out.setup == NULL && out.install == NULL);
	CHECK_STR(out.start, "node main.js");
	CHECK_INT(sbx_strv_len(out.exec), 2);
	CHECK_STR(out.exec[1], "main.js");
	CHECK_STR(out.image_env[0], "PATH=/usr/bin");
	CHECK(out.image_user == NULL);
	CHECK_STR(out.image_workdir, "/app");
	worker_record_free(&out);
	CHECK(out.worker == NULL);
}

TEST(absent_exec_and_empty_env_survive)
{
	fresh_state();
	sbx_error_t err = NULL;
	struct worker_record in, out;
	sample(&in);
	char *none[] = { NULL };
	in.source = WORKER_SOURCE_PATH;
	in.exec = NULL;
	in.env = none;
	in.image_env = NULL; /* saved as an empty list */
	CHECK_INT(worker_record_save(&in, &err), 0);
	CHECK_INT(worker_record_load(in.worker, &out, &err), 0);
	CHECK_INT(out.source, WORKER_SOURCE_PATH);
	CHECK(out.exec == NULL);
	CHECK(out.env != NULL && out.env[0] == NULL);
	CHECK(out.image_env != NULL && out.image_env[0] == NULL);
	worker_record_free(&out);
}

TEST(directory_is_private_and_save_replaces)
{
	fresh_state();
	sbx_error_t err = NULL;
	struct worker_record in, out;
	sample(&in);
	CHECK_INT(worker_record_save(&in, &err), 0);
	in.cpus = 4;
	CHECK_INT(worker_record_save(&in, &err), 0);
	char dir[PATH_MAX], path[PATH_MAX + 16];
	CHECK_INT(worker_dir(in.worker, dir, sizeof(dir), &err), 0);
	struct stat st;
	CHECK_INT(stat(dir, &st), 0);
	CHECK_INT(st.st_mode & 07777, 0700);
	snprintf(path, sizeof(path), "%s/worker.json", dir);
	CHECK_INT(stat(path, &st), 0);
	CHECK_INT(st.st_mode & 077, 0);
	CHECK_INT(worker_record_load(in.worker, &out, &err), 0);
	CHECK_INT(out.cpus, 4);
	worker_record_free(&out);
	/* No temp file is left beside it. */
	char cmd[PATH_MAX + 64];
	snprintf(cmd, sizeof(cmd), "test $(ls -A '%s' | wc -l) -eq 1", dir);
	CHECK_INT(system(cmd), 0);
}

/* Saves a valid record for "w", then overwrites worker.json with `text`. */
static void corrupt(const char *text)
{
	sbx_error_t err = NULL;
	struct worker_record in;
	sample(&in);
	in.worker = "w";
	if (worker_record_save(&in, &err) < 0)
		abort();
	char dir[PATH_MAX], path[PATH_MAX + 16];
	if (worker_dir("w", dir, sizeof(dir), &err) < 0)
		abort();
	snprintf(path, sizeof(path), "%s/worker.json", dir);
	write_file(path, text);
}

TEST(bad_records_are_refused_naming_the_key)
{
	fresh_state();
	struct {
		const char *text, *want;
	} cases[] = {
		{ "not json", "worker.json" },
		{ "{\"version\":2}", "not a version 1" },
		{ "{\"version\":1,\"worker\":\"w\",\"source\":\"nope\"}", "`source`" },
		{ "{\"version\":1,\"worker\":\"w\",\"source\":\"path\",\"host_path\":\"/p\",\"base_image\":\"b\","
		  "\"image_erofs\":\"e\",\"cpus\":0,\"memory_mb\":1,\"env\":[],\"image_env\":[]}",
		  "`cpus`" },
		{ "{\"version\":1,\"worker\":\"w\",\"source\":\"path\",\"host_path\":\"/p\",\"base_image\":\"b\","
		  "\"image_erofs\":\"e\",\"cpus\":1,\"memory_mb\":1,\"env\":[1],\"image_env\":[]}",
		  "`env`" },
		{ "{\"version\":1,\"worker\":\"other\",\"source\":\"path\",\"host_path\":\"/p\",\"base_image\":\"b\","
		  "\"image_erofs\":\"e\",\"cpus\":1,\"memory_mb\":1,\"env\":[],\"image_env\":[]}",
		  "names another worker" },
		{ "{\"version\":1,\"worker\":\"w\",\"source\":\"path\",\"host_path\":\"/p\",\"base_image\":\"b\","
		  "\"image_erofs\":\"e\",\"cpus\":1,\"memory_mb\":1,\"env\":[],\"image_env\":[],\"start\":5}",
		  "`start`" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		corrupt(cases[i].text);
		sbx_error_t err = NULL;
		struct worker_record out;
		CHECK_INT(worker_record_load("w", &out, &err), -1);
		if (strstr(sbx_error_msg(err), cases[i].want) == NULL)
			sbx_test_fail(__FILE__, __LINE__, "case %zu: \"%s\" lacks \"%s\"", i, sbx_error_msg(err),
				      cases[i].want);
		sbx_error_free(&err);
	}
}
