/* Handler-level tests: JSON payloads straight into sbx_adapter_call(), no
 * engine.  Each checks the error body the engine would forward. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/adapter.h"
#include "harness.h"

#define UNKNOWN_ID "0f8fad5b-d9cb-469f-a165-70867728950e"

static struct sbx_adapter *make(const char *config)
{
	json_t *v = config != NULL ? json_loads(config, 0, NULL) : NULL;
	sbx_error_t err = NULL;
	struct sbx_config *cfg = sbx_config_parse(v, &err);
	json_decref(v);
	return cfg != NULL ? sbx_adapter_new(cfg, &err) : NULL;
}

struct reply {
	int rc;
	json_t *out;
	json_t *envelope; /* parsed from "handler error: ..." when present */
	const char *code; /* envelope code, or "decode" / "" */
	const char *message;
};

static struct reply call(struct sbx_adapter *a, const char *op, const char *payload)
{
	struct reply r = { 0 };
	json_t *req = payload != NULL ? json_loads(payload, JSON_DECODE_ANY, NULL) : NULL;
	r.rc = sbx_adapter_call(a, op, req, &r.out);
	json_decref(req);
	r.code = "";
	if (r.rc < 0) {
		const char *m = json_string_value(json_object_get(r.out, "message"));
		if (m != NULL && strncmp(m, "handler error: ", 15) == 0) {
			r.envelope = json_loads(m + 15, 0, NULL);
			r.code = json_string_value(json_object_get(r.envelope, "code"));
			r.message = json_string_value(json_object_get(r.envelope, "message"));
		} else if (m != NULL && strncmp(m, "serialization error: ", 21) == 0) {
			r.code = "decode";
			r.message = m + 21;
		}
	}
	return r;
}

static void done(struct reply *r)
{
	json_decref(r->envelope);
	json_decref(r->out);
}

#define EXPECT(a, op, payload, want_code)                                                                    \
	do {                                                                                                 \
		struct reply _r = call(a, op, payload);                                                      \
		int _ok = _r.rc == -1 && _r.code != NULL && strcmp(_r.code, want_code) == 0;                 \
		if (!_ok)                                                                                    \
			sbx_test_fail(__FILE__, __LINE__, "%s %s: rc %d code %s (%s), expected %s", op, payload, \
				      _r.rc, _r.code ? _r.code : "?", _r.message ? _r.message : "", want_code); \
		done(&_r);                                                                                   \
		if (!_ok)                                                                                    \
			return;                                                                              \
	} while (0)

TEST(all_23_functions_have_schemas)
{
	size_t n;
	CHECK(sbx_ops(&n) != NULL);
	CHECK_INT(n, 23);
	const char *ids[] = { "adapter::info", "catalog::list", "create", "exec", "stop", "list", "run", "fs::ls",
			      "fs::stat", "fs::mkdir", "fs::rm", "fs::chmod", "fs::mv", "fs::grep", "fs::sed",
			      "fs::write", "fs::read", "worker::prepare", "worker::start", "worker::status",
			      "worker::logs", "worker::stop", "worker::destroy" };
	for (size_t i = 0; i < 23; i++) {
		const struct sbx_op *o = sbx_op_find(ids[i]);
		CHECK(o != NULL);
		CHECK(o->description != NULL && o->description[0] != '\0');
		json_error_t jerr;
		json_t *req = json_loads(o->request_schema, 0, &jerr);
		json_t *resp = json_loads(o->response_schema, 0, &jerr);
		if (req == NULL || resp == NULL)
			sbx_test_fail(__FILE__, __LINE__, "%s: bad schema: %s", ids[i], jerr.text);
		CHECK(req != NULL && resp != NULL);
		CHECK_STR(json_string_value(json_object_get(req, "type")), "object");
		CHECK(json_is_object(json_object_get(req, "properties")));
		CHECK(json_is_array(json_object_get(req, "required")));
		json_decref(req);
		json_decref(resp);
	}
}

TEST(adapter_info_answers)
{
	struct sbx_adapter *a = make(NULL);
	CHECK(a != NULL);
	struct reply r = call(a, "adapter::info", NULL);
	CHECK_INT(r.rc, 0);
	char *s = json_dumps(r.out, JSON_COMPACT);
	char want[1024];
	snprintf(want, sizeof(want),
		 "{\"adapter\":\"sandbox-libkrun\",\"adapter_version\":\"%s\",\"contract\":{\"major\":1,\"minor\":1},"
		 "\"extensions\":[\"sandbox-libkrun::process::list\",\"sandbox-libkrun::process::logs\","
		 "\"sandbox-libkrun::process::wait\",\"sandbox-libkrun::process::signal\",\"sandbox-libkrun::terminal::open\","
		 "\"sandbox-libkrun::terminal::resize\",\"sandbox-libkrun::terminal::close\",\"sandbox-libkrun::pause\",\"sandbox-libkrun::resume\","
		 "\"sandbox-libkrun::snapshot\",\"sandbox-libkrun::fork\",\"sandbox-libkrun::snapshot::list\",\"sandbox-libkrun::snapshot::delete\"]}",
		 SBX_VERSION);
	CHECK_STR(s, want);
	CHECK(strncmp(SBX_VERSION, "0.2.", 4) == 0);
	free(s);
	done(&r);
	sbx_adapter_free(a);
}

TEST(catalog_and_list_tolerate_unknown_fields)
{
	struct sbx_adapter *a = make("{\"custom_images\":{\"pg17\":\"docker.io/library/postgres:17\"}}");
	struct reply r = call(a, "catalog::list", "{\"filter\":\"x\",\"page\":3,\"_caller_worker_id\":\"w\"}");
	CHECK_INT(r.rc, 0);
	json_t *images = json_object_get(r.out, "images");
	CHECK_INT(json_array_size(images), 3);
	CHECK_STR(json_string_value(json_object_get(json_array_get(images, 2), "kind")), "custom");
	done(&r);
	r = call(a, "list", "{\"show_all\":true}");
	CHECK_INT(r.rc, 0);
	char *s = json_dumps(r.out, JSON_COMPACT);
	CHECK_STR(s, "{\"sandboxes\":[]}");
	free(s);
	done(&r);
	EXPECT(a, "list", "null", "decode");
	sbx_adapter_free(a);
}

TEST(create_and_run_image_checks)
{
	struct sbx_adapter *a = make(NULL); /* empty allowlist: everything S100 */
	EXPECT(a, "create", "{\"image\":\"node\"}", "S100");
	struct reply r = call(a, "create", "{\"image\":\"node\"}");
	CHECK_STR(json_string_value(json_object_get(r.envelope, "type")), "config");
	CHECK(json_is_false(json_object_get(r.envelope, "retryable")));
	CHECK(json_is_null(json_object_get(r.envelope, "fix")));
	done(&r);
	r = call(a, "run", "{\"image\":\"node\",\"code\":\"1\",\"lang\":\"node\"}");
	CHECK_STR(r.code, "S100");
	CHECK_STR(r.message, "during sandbox::run step `create`: image 'node' not in image_allowlist: image_allowlist is "
			     "empty: no image may be created (add it to the configuration's image_allowlist)");
	CHECK_STR(json_string_value(json_object_get(json_object_get(r.envelope, "fix"), "sandbox_id")), "");
	CHECK_STR(json_string_value(json_object_get(json_object_get(r.envelope, "fix"), "inner_code")), "S100");
	CHECK(json_is_null(json_object_get(r.envelope, "fix_note")));
	done(&r);
	EXPECT(a, "create", "{}", "decode");
	EXPECT(a, "create", "{\"image\":5}", "decode");
	EXPECT(a, "create", "{\"image\":\"python\",\"cpus\":\"2\"}", "decode");
	EXPECT(a, "run", "{\"image\":\"python\",\"code\":\"1\"}", "decode");
	EXPECT(a, "run", "{\"image\":\"python\",\"lang\":\"py\",\"code\":\"1\",\"files\":[{\"path\":\"/a\"}]}", "decode");
	EXPECT(a, "create", "null", "decode");
	sbx_adapter_free(a);
}

TEST(create_caps_env_then_no_vm)
{
	struct sbx_adapter *a = make("{\"image_allowlist\":[\"python\",\"node\"],\"per_image_caps\":{\"python\":"
				     "{\"max_cpus\":2,\"max_memory_mb\":1024},\"node\":{\"max_cpus\":4}}}");
	struct reply r = call(a, "create", "{\"image\":\"python\",\"cpus\":99}");
	CHECK_STR(r.code, "S400");
	CHECK_STR(r.message, "resource limit exceeded: cpus=99 exceeds per-image cap 2");
	done(&r);
	r = call(a, "create", "{\"image\":\"python\",\"memory_mb\":2048}");
	CHECK_STR(r.message, "resource limit exceeded: memory_mb=2048 exceeds per-image cap 1024");
	done(&r);
	/* [P] quirk: node's missing max_memory_mb is 0, so every create fails. */
	EXPECT(a, "create", "{\"image\":\"node\"}", "S400");
	EXPECT(a, "create", "{\"image\":\"python\",\"env\":{\"9bad\":\"x\"}}", "S001");
	r = call(a, "create", "{\"image\":\"python\",\"env\":[\"9bad=x\"]}");
	CHECK_STR(r.code, "S300");
	CHECK_STR(r.message, "VM boot failed: VM support is not built yet in this sandbox-libkrun build");
	done(&r);
	r = call(a, "run", "{\"image\":\"python\",\"code\":\"print(1)\",\"lang\":\"python\"}");
	CHECK_STR(r.code, "S300");
	CHECK_STR(json_string_value(json_object_get(json_object_get(r.envelope, "fix"), "context")),
		  "during sandbox::run step `create`");
	done(&r);
	CHECK_INT(sbx_registry_count(a->reg), 0);
	sbx_adapter_free(a);
}

/* A name that reads as an id (what `ps` shows of another sandbox) is
 * refused before any slot is taken; ordinary names go on to the boot. */
TEST(create_refuses_names_that_look_like_ids)
{
	struct sbx_adapter *a = make("{\"image_allowlist\":[\"python\"]}");
	static const char *const idlike[] = { "3f2a9c1e-8b7", "deadbeef", "0f8fad5b-d9cb-469f-a165-70867728950e",
					      "{0F8FAD5B-D9CB-469F-A165-70867728950E}" };
	char payload[256];
	for (size_t i = 0; i < sizeof(idlike) / sizeof(idlike[0]); i++) {
		snprintf(payload, sizeof(payload), "{\"image\":\"python\",\"name\":\"%s\"}", idlike[i]);
		struct reply r = call(a, "create", payload);
		CHECK_STR(r.code, "S001");
		CHECK(strstr(r.message, "`name`") != NULL && strstr(r.message, idlike[i]) != NULL);
		done(&r);
	}
	static const char *const ordinary[] = { "web", "worker-1", "sb-3f2a9c1e", "cafe babe" };
	for (size_t i = 0; i < sizeof(ordinary) / sizeof(ordinary[0]); i++) {
		snprintf(payload, sizeof(payload), "{\"image\":\"python\",\"name\":\"%s\"}", ordinary[i]);
		struct reply r = call(a, "create", payload);
		CHECK_STR(r.code, "S300"); /* no VM in this build: it got past every check */
		done(&r);
	}
	CHECK_INT(sbx_registry_count(a->reg), 0);
	sbx_adapter_free(a);
}

TEST(create_max_sandboxes_zero)
{
	struct sbx_adapter *a = make("{\"image_allowlist\":[\"python\"],\"max_concurrent_sandboxes\":0}");
	struct reply r = call(a, "create", "{\"image\":\"python\"}");
	CHECK_STR(r.code, "S400");
	CHECK_STR(r.message, "resource limit exceeded: max_concurrent_sandboxes (0) reached");
	done(&r);
	sbx_adapter_free(a);
}

TEST(exec_error_order)
{
	struct sbx_adapter *a = make(NULL);
	EXPECT(a, "exec", "{\"sandbox_id\":\"not-a-uuid\",\"cmd\":\"ls\"}", "S001");
	EXPECT(a, "exec", "{\"sandbox_id\":\"" UNKNOWN_ID "\",\"cmd\":\"ls\"}", "S002");
	EXPECT(a, "exec", "{\"sandbox_id\":\"{" UNKNOWN_ID "}\",\"cmd\":\"ls\"}", "S002");
	EXPECT(a, "exec", "{\"sandbox_id\":\"" UNKNOWN_ID "\",\"cmd\":\"node -v\",\"args\":[\"x\"]}", "S001");
	EXPECT(a, "exec", "{\"sandbox_id\":\"" UNKNOWN_ID "\",\"cmd\":\"node 'x\"}", "S001");
	EXPECT(a, "exec", "{\"sandbox_id\":\"" UNKNOWN_ID "\",\"argv\":[\"python\"],\"cmd\":\"node\"}", "S001");
	EXPECT(a, "exec", "{\"sandbox_id\":\"" UNKNOWN_ID "\",\"cmd\":\"\"}", "S001");
	EXPECT(a, "exec", "{\"sandbox_id\":\"" UNKNOWN_ID "\",\"cmd\":\"ls\",\"env\":{\"9bad\":\"x\"}}", "S001");
	EXPECT(a, "exec", "{\"sandbox_id\":\"" UNKNOWN_ID "\",\"cmd\":\"ls\",\"env\":[\"9bad=x\"]}", "S002");
	/* stdin is checked after admission, so an unknown sandbox wins. */
	EXPECT(a, "exec", "{\"sandbox_id\":\"" UNKNOWN_ID "\",\"cmd\":\"ls\",\"stdin\":\"!!!\"}", "S002");
	EXPECT(a, "exec", "{\"cmd\":\"ls\"}", "decode");
	EXPECT(a, "exec", "{\"sandbox_id\":5,\"cmd\":\"ls\"}", "decode");
	EXPECT(a, "exec", "{\"sandbox_id\":\"" UNKNOWN_ID "\",\"args\":\"x\"}", "decode");
	EXPECT(a, "exec", "{\"sandbox_id\":\"" UNKNOWN_ID "\",\"cmd\":\"ls\",\"timeout_ms\":-5}", "decode");
	EXPECT(a, "exec", "{\"sandbox_id\":\"" UNKNOWN_ID "\",\"cmd\":\"ls\",\"env\":\"A=1\"}", "decode");
	struct reply r = call(a, "exec", "{\"sandbox_id\":\"" UNKNOWN_ID "\",\"cmd\":\"ls\"}");
	CHECK_STR(r.message, "sandbox not found: " UNKNOWN_ID);
	done(&r);
	r = call(a, "exec", "{\"sandbox_id\":\"0F8FAD5BD9CB469FA16570867728950E\",\"cmd\":\"ls\"}");
	CHECK_STR(r.message, "sandbox not found: " UNKNOWN_ID);
	done(&r);
	r = call(a, "exec", "{\"sandbox_id\":\"bogus\",\"cmd\":\"ls\"}");
	CHECK_STR(r.message, "invalid request: sandbox_id is not a valid UUID: bogus");
	done(&r);
	sbx_adapter_free(a);
}

TEST(exec_on_a_known_record)
{
	struct sbx_adapter *a = make("{\"max_concurrent_exec_per_sandbox\":0}");
	sbx_error_t err = NULL;
	CHECK_INT(sbx_registry_insert(a->reg, UNKNOWN_ID, NULL, "python", 300, &err), 0);
	EXPECT(a, "exec", "{\"sandbox_id\":\"" UNKNOWN_ID "\",\"cmd\":\"cat\",\"stdin\":\"!!!\"}", "S001");
	struct reply r = call(a, "exec", "{\"sandbox_id\":\"" UNKNOWN_ID "\",\"cmd\":\"cat\",\"stdin\":\"!!!\"}");
	CHECK(strncmp(r.message, "invalid request: stdin base64 decode: ", 38) == 0);
	done(&r);
	EXPECT(a, "exec", "{\"sandbox_id\":\"" UNKNOWN_ID "\",\"cmd\":\"cat\",\"stdin\":\"aGkK\"}", "S300");
	/* The slot was released each time: a held slot would give S003. */
	struct sbx_sandbox *sb = sbx_registry_exec_begin(a->reg, UNKNOWN_ID, 1, &err);
	CHECK(sb != NULL);
	EXPECT(a, "exec", "{\"sandbox_id\":\"" UNKNOWN_ID "\",\"cmd\":\"cat\"}", "S003");
	sbx_registry_exec_end(a->reg, sb);
	r = call(a, "list", "{}");
	json_t *e = json_array_get(json_object_get(r.out, "sandboxes"), 0);
	CHECK_STR(json_string_value(json_object_get(e, "sandbox_id")), UNKNOWN_ID);
	CHECK(json_is_null(json_object_get(e, "name")));
	CHECK_INT(json_integer_value(json_object_get(e, "exec_slots_free")), 1);
	done(&r);
	sbx_adapter_free(a);
}

TEST(stop_then_not_found)
{
	struct sbx_adapter *a = make(NULL);
	sbx_error_t err = NULL;
	CHECK_INT(sbx_registry_insert(a->reg, UNKNOWN_ID, "n", "python", 300, &err), 0);
	struct reply r = call(a, "stop", "{\"sandbox_id\":\"urn:uuid:" UNKNOWN_ID "\",\"wait\":true}");
	CHECK_INT(r.rc, 0);
	char *s = json_dumps(r.out, JSON_COMPACT);
	CHECK_STR(s, "{\"sandbox_id\":\"" UNKNOWN_ID "\",\"stopped\":true}");
	free(s);
	done(&r);
	EXPECT(a, "stop", "{\"sandbox_id\":\"" UNKNOWN_ID "\"}", "S002");
	EXPECT(a, "stop", "{\"sandbox_id\":\"x\"}", "S001");
	EXPECT(a, "stop", "{}", "decode");
	sbx_adapter_free(a);
}

TEST(fs_shape_checks_before_lookup)
{
	struct sbx_adapter *a = make(NULL);
	const char *id = "\"sandbox_id\":\"" UNKNOWN_ID "\"";
	char p[512];
	snprintf(p, sizeof(p), "{%s,\"path\":\"/a\",\"content\":\"x\",\"content_b64\":\"eA==\"}", id);
	EXPECT(a, "fs::write", p, "S001");
	snprintf(p, sizeof(p), "{\"sandbox_id\":\"bad\",\"path\":\"/a\",\"content\":\"x\",\"content_b64\":\"eA==\"}");
	struct reply r = call(a, "fs::write", p);
	CHECK_STR(r.message, "invalid request: set either `content` (string or StreamChannelRef) or `content_b64`, not both");
	done(&r);
	snprintf(p, sizeof(p), "{%s,\"path\":\"/a\"}", id);
	r = call(a, "fs::write", p);
	CHECK_STR(r.message, "invalid request: missing file body: set `content` (string or StreamChannelRef) or `content_b64`");
	done(&r);
	snprintf(p, sizeof(p), "{%s,\"path\":\"/a\",\"content\":null,\"content_b64\":\"!!\"}", id);
	r = call(a, "fs::write", p);
	CHECK_STR(r.code, "S001");
	CHECK(strncmp(r.message, "invalid request: content_b64 is not valid base64: ", 50) == 0);
	done(&r);
	snprintf(p, sizeof(p), "{%s,\"path\":\"/a\",\"content\":\"x\"}", id);
	EXPECT(a, "fs::write", p, "S002");
	snprintf(p, sizeof(p), "{%s,\"path\":\"/a\",\"content\":{\"channel_id\":\"c\",\"access_key\":\"k\",\"direction\":\"read\"}}", id);
	EXPECT(a, "fs::write", p, "S002");
	snprintf(p, sizeof(p), "{%s,\"path\":\"/a\",\"content\":{\"channel_id\":\"c\"}}", id);
	EXPECT(a, "fs::write", p, "decode");
	snprintf(p, sizeof(p), "{%s,\"path\":\"/a\",\"content\":5}", id);
	EXPECT(a, "fs::write", p, "decode");

	snprintf(p, sizeof(p), "{%s,\"files\":[\"/a\"],\"path\":\"/b\",\"pattern\":\"x\",\"replacement\":\"y\"}", id);
	r = call(a, "fs::sed", p);
	CHECK_STR(r.code, "S210");
	CHECK_STR(r.message, "sed: provide exactly one of files or path, not both");
	done(&r);
	snprintf(p, sizeof(p), "{%s,\"files\":[],\"pattern\":\"x\",\"replacement\":\"y\"}", id);
	r = call(a, "fs::sed", p);
	CHECK_STR(r.message, "sed: must provide exactly one of files or path");
	done(&r);
	EXPECT(a, "fs::sed", "{\"sandbox_id\":\"bad\",\"files\":[\"/a\"],\"path\":\"/b\",\"pattern\":\"x\",\"replacement\":\"y\"}", "S001");
	snprintf(p, sizeof(p), "{%s,\"files\":[\"/a\"],\"pattern\":\"x\",\"replacement\":\"y\"}", id);
	EXPECT(a, "fs::sed", p, "S002");
	snprintf(p, sizeof(p), "{%s,\"files\":[\"/a\"],\"pattern\":\"x\"}", id);
	EXPECT(a, "fs::sed", p, "decode");
	sbx_adapter_free(a);
}

TEST(fs_preamble_every_op)
{
	struct sbx_adapter *a = make(NULL);
	const char *ops[][2] = {
		{ "fs::ls", "\"path\":\"/\"" }, { "fs::stat", "\"path\":\"/\"" }, { "fs::read", "\"path\":\"/x\"" },
		{ "fs::mkdir", "\"path\":\"/x\"" }, { "fs::rm", "\"path\":\"/x\"" },
		{ "fs::chmod", "\"path\":\"/x\",\"mode\":\"0755\"" }, { "fs::mv", "\"src\":\"/a\",\"dst\":\"/b\"" },
		{ "fs::grep", "\"path\":\"/\",\"pattern\":\"x\"" },
	};
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		char p[512];
		snprintf(p, sizeof(p), "{\"sandbox_id\":\"" UNKNOWN_ID "\",%s,\"_caller_worker_id\":\"w\",\"x\":1}", ops[i][1]);
		EXPECT(a, ops[i][0], p, "S002");
		snprintf(p, sizeof(p), "{\"sandbox_id\":\"nope\",%s}", ops[i][1]);
		EXPECT(a, ops[i][0], p, "S001");
		EXPECT(a, ops[i][0], "{\"sandbox_id\":\"" UNKNOWN_ID "\"}", "decode");
		EXPECT(a, ops[i][0], "null", "decode");
	}
	EXPECT(a, "fs::chmod", "{\"sandbox_id\":\"" UNKNOWN_ID "\",\"path\":\"/x\"}", "decode");
	EXPECT(a, "fs::chmod", "{\"sandbox_id\":\"" UNKNOWN_ID "\",\"path\":\"/x\",\"mode\":\"7\",\"uid\":-1}", "decode");
	EXPECT(a, "fs::grep", "{\"sandbox_id\":\"" UNKNOWN_ID "\",\"path\":\"/x\",\"pattern\":\"a\",\"include_glob\":\"*\"}", "decode");
	struct reply r = call(a, "fs::ls", "{\"sandbox_id\":5,\"path\":\"/\"}");
	CHECK_STR(r.message, "invalid type: integer `5`, expected a string for field `sandbox_id`");
	done(&r);
	r = call(a, "fs::mv", "{\"sandbox_id\":\"" UNKNOWN_ID "\",\"src\":\"/a\"}");
	CHECK_STR(r.message, "missing field `dst`");
	done(&r);
	sbx_adapter_free(a);
}

TEST(fs_mode_checked_on_a_known_record)
{
	struct sbx_adapter *a = make(NULL);
	sbx_error_t err = NULL;
	CHECK_INT(sbx_registry_insert(a->reg, UNKNOWN_ID, NULL, "python", 300, &err), 0);
	struct reply r = call(a, "fs::chmod", "{\"sandbox_id\":\"" UNKNOWN_ID "\",\"path\":\"/x\",\"mode\":\"9\"}");
	CHECK_STR(r.code, "S210");
	CHECK_STR(r.message, "invalid octal mode: 9");
	done(&r);
	EXPECT(a, "fs::mkdir", "{\"sandbox_id\":\"" UNKNOWN_ID "\",\"path\":\"/x\",\"mode\":\"rwx\"}", "S210");
	EXPECT(a, "fs::mkdir", "{\"sandbox_id\":\"" UNKNOWN_ID "\",\"path\":\"/x\"}", "S300");
	EXPECT(a, "fs::ls", "{\"sandbox_id\":\"" UNKNOWN_ID "\",\"path\":\"/\"}", "S300");
	sbx_adapter_free(a);
}

static const char *const worker_ops[] = { "worker::prepare", "worker::start", "worker::status",
					  "worker::logs", "worker::stop", "worker::destroy" };

TEST(worker_token_unset_always_s505)
{
	unsetenv("III_SANDBOX_WORKER_TOKEN");
	struct sbx_adapter *a = make(NULL);
	for (size_t i = 0; i < 6; i++) {
		EXPECT(a, worker_ops[i], "{\"auth\":\"\",\"worker\":\"x\"}", "S505");
		EXPECT(a, worker_ops[i], "{\"worker\":\"x\"}", "S505");
		EXPECT(a, worker_ops[i], "null", "S505");
	}
	sbx_adapter_free(a);
	setenv("III_SANDBOX_WORKER_TOKEN", "", 1);
	a = make(NULL);
	EXPECT(a, "worker::status", "{\"auth\":\"\",\"worker\":\"x\"}", "S505");
	sbx_adapter_free(a);
}

TEST(worker_token_checked_first_and_never_echoed)
{
	setenv("III_SANDBOX_WORKER_TOKEN", "s3cr3t-token", 1);
	struct sbx_adapter *a = make(NULL);
	for (size_t i = 0; i < 6; i++) {
		EXPECT(a, worker_ops[i], "{\"auth\":\"wrong\",\"worker\":\"x\"}", "S505");
		EXPECT(a, worker_ops[i], "{\"auth\":\"s3cr3t-token-longer\"}", "S505");
		EXPECT(a, worker_ops[i], "{\"auth\":\"s3cr3t-toke\"}", "S505");
		EXPECT(a, worker_ops[i], "{\"auth\":5,\"worker\":\"x\"}", "S505");
		EXPECT(a, worker_ops[i], "{\"auth\":\"s3cr3t-token\"}", "decode");
		EXPECT(a, worker_ops[i], "{\"auth\":\"s3cr3t-token\",\"worker\":\"x\",\"host_path\":\"/etc\"}", "S300");
	}
	struct reply r = call(a, "worker::status", "{\"auth\":\"wrong\",\"worker\":\"x\"}");
	char *s = json_dumps(r.out, JSON_COMPACT);
	CHECK(strstr(s, "s3cr3t") == NULL);
	CHECK(strstr(s, "wrong") == NULL);
	CHECK(json_is_false(json_object_get(r.envelope, "retryable")));
	CHECK_STR(json_string_value(json_object_get(r.envelope, "type")), "validation");
	free(s);
	done(&r);
	sbx_adapter_free(a);
	unsetenv("III_SANDBOX_WORKER_TOKEN");
}

TEST(unknown_op_is_refused)
{
	struct sbx_adapter *a = make(NULL);
	json_t *out = NULL;
	CHECK_INT(sbx_adapter_call(a, "fs::nope", NULL, &out), -1);
	CHECK_STR(json_string_value(json_object_get(out, "code")), "function_not_found");
	json_decref(out);
	sbx_adapter_free(a);
}
