/* Worker resources: cpus and memory as written, defaults and the bundle cap. */
#include <string.h>

#include "harness.h"
#include "worker/worker_resources.h"

static int cpus(const char *json, unsigned *out)
{
	sbx_error_t err = NULL;
	json_t *v = json_loads(json, JSON_DECODE_ANY, NULL);
	int rc = worker_cpus_parse(v, "resources.cpus", out, &err);
	sbx_error_free(&err);
	json_decref(v);
	return rc;
}

static int mem(const char *json, unsigned *out)
{
	sbx_error_t err = NULL;
	json_t *v = json_loads(json, JSON_DECODE_ANY, NULL);
	int rc = worker_memory_parse(v, "resources.memory", out, &err);
	sbx_error_free(&err);
	json_decref(v);
	return rc;
}

TEST(cpus_forms)
{
	unsigned c = 0;
	CHECK_INT(cpus("2", &c), 0);
	CHECK_INT(c, 2);
	CHECK_INT(cpus("1.5", &c), 0);
	CHECK_INT(c, 2);
	CHECK_INT(cpus("\"500m\"", &c), 0);
	CHECK_INT(c, 1);
	CHECK_INT(cpus("\"2500m\"", &c), 0);
	CHECK_INT(c, 3);
	CHECK_INT(cpus("\"3\"", &c), 0);
	CHECK_INT(c, 3);
	const char *bad[] = { "0", "-1", "65", "0.0", "\"\"", "\"m\"", "\"1.\"", "\"x\"", "true", "[1]", "null",
			      "99999999999999999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (cpus(bad[i], &c) != -1)
			sbx_test_fail(__FILE__, __LINE__, "cpus %s accepted", bad[i]);
	}
}

TEST(memory_forms)
{
	unsigned m = 0;
	struct {
		const char *in;
		unsigned want;
	} ok[] = { { "512", 512 },      { "\"512Mi\"", 512 },        { "\"2Gi\"", 2048 },  { "\"1048576Ki\"", 1024 },
		   { "\"536870912\"", 512 }, { "\"1\"", 1 /* one byte, rounded up */ }, { "\"1.5Gi\"", 1536 } };
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		CHECK_INT(mem(ok[i].in, &m), 0);
		CHECK_INT(m, ok[i].want);
	}
	const char *bad[] = { "0", "-5", "1.5", "\"\"", "\"Gi\"", "\"2GB\"", "\"2G\"", "\"-1Mi\"", "\"2048Ti\"",
			      "1048577", "true", "{}" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (mem(bad[i], &m) != -1)
			sbx_test_fail(__FILE__, __LINE__, "memory %s accepted", bad[i]);
	}
}

TEST(map_keys)
{
	sbx_error_t err = NULL;
	struct worker_resources r;
	json_t *v = json_loads("{\"cpus\":2,\"gpu\":1,\"memory\":null}", 0, NULL);
	CHECK_INT(worker_resources_parse(v, "resources", true, &r, &err), -1);
	CHECK_STR(sbx_error_msg(err), "unknown key `resources.gpu`");
	sbx_error_free(&err);
	/* A request's unknown fields are ignored, as everywhere in requests. */
	CHECK_INT(worker_resources_parse(v, "resources", false, &r, &err), 0);
	CHECK_INT(r.cpus, 2);
	CHECK_INT(r.memory_mb, 0);
	json_decref(v);
	v = json_loads("{\"cpus\":\"x\"}", 0, NULL);
	CHECK_INT(worker_resources_parse(v, "resources", false, &r, &err), -1);
	CHECK(strstr(sbx_error_msg(err), "`resources.cpus` must be") != NULL);
	sbx_error_free(&err);
	json_decref(v);
}

TEST(resolve_precedence_defaults_and_bundle_cap)
{
	struct worker_resources none = { 0, 0 };
	struct worker_resources r = worker_resources_resolve("w", false, none, none);
	CHECK_INT(r.cpus, 2);
	CHECK_INT(r.memory_mb, 2048);
	r = worker_resources_resolve("w", false, (struct worker_resources){ 0, 8192 }, (struct worker_resources){ 8, 1024 });
	CHECK_INT(r.cpus, 8);
	CHECK_INT(r.memory_mb, 8192);
	r = worker_resources_resolve("w", true, (struct worker_resources){ 8, 0 }, (struct worker_resources){ 0, 9000 });
	CHECK_INT(r.cpus, 4);
	CHECK_INT(r.memory_mb, 4096);
	r = worker_resources_resolve("w", true, (struct worker_resources){ 3, 0 }, none);
	CHECK_INT(r.cpus, 3);
	CHECK_INT(r.memory_mb, 2048);
}
