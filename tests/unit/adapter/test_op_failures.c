/* Every failing call carries its cause: each function of the op table runs
 * over fake VMs, fs host and worker operations whose call number N fails,
 * for N = 0, 1, 2, ... until a run reaches no failure.  A failure either
 * states its error (as the real layers must) or returns failure without
 * one (the bug this guards against); either way the reply must hold a
 * contract S-code and a non-empty message, never "VM boot failed: ". */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/adapter.h"
#include "adapter/scode.h"
#include "harness.h"

#define TOKEN "t0ken"
#define MAX_STEPS 64

/* The injection: call number fail_at of the test's thread fails. */
static struct {
	pthread_t thread;
	int fail_at; /* -1: nothing fails */
	int steps;   /* calls counted so far */
	bool silent; /* fail without setting the error */
} inj = { .fail_at = -1 };

/* True when this call is the one to fail; sets its error unless silent.
 * Calls from other threads (the reaper) are not counted. */
static bool fails(sbx_error_t *err, const char *what)
{
	if (!pthread_equal(pthread_self(), inj.thread))
		return false;
	if (inj.steps++ != inj.fail_at)
		return false;
	if (!inj.silent && err != NULL)
		sbx_error_set(err, EIO, "injected failure of %s", what);
	return true;
}

static void *fake_boot(void *ctx, const struct sbx_boot_request *req, sbx_error_t *err)
{
	if (fails(err, "boot"))
		return NULL;
	return calloc(1, 1);
}

static int fake_exec(void *vm, const struct sbx_exec_request *req, struct sbx_exec_result *res, sbx_error_t *err)
{
	if (fails(err, "exec"))
		return -1;
	if (exec_output_append(&res->out, "ok\n", 3, err) < 0)
		return -1;
	res->exit_code = 0;
	res->duration_ms = 1;
	return 0;
}

static int fake_write_file(void *vm, const char *path, uint32_t mode, bool parents, const void *data, size_t len,
			   sbx_error_t *err)
{
	return fails(err, "write_file") ? -1 : 0;
}

static void fake_stop(void *vm)
{
	free(vm);
}

static bool fake_alive(void *vm)
{
	return !fails(NULL, "alive");
}

static const struct sbx_backend_ops backend = { .boot = fake_boot, .exec = fake_exec, .write_file = fake_write_file,
						 .stop = fake_stop, .alive = fake_alive };

static json_t *fs_call(void *ctx, void *vm, const struct proto_msg *req, sbx_error_t *err)
{
	if (fails(err, "fs call"))
		return NULL;
	return json_object();
}

static int fs_write(void *ctx, void *vm, const struct sbx_fs_write_req *w, uint64_t *written, sbx_error_t *err)
{
	if (fails(err, "fs write"))
		return -1;
	*written = w->len;
	return 0;
}

static json_t *fs_read(void *ctx, void *vm, const char *path, void (*done)(void *ud), void *done_ud,
		       sbx_error_t *err)
{
	if (fails(err, "fs read"))
		return NULL;
	done(done_ud);
	return json_object();
}

static const struct sbx_fs_ops fs_ops = { fs_call, fs_write, fs_read, NULL };

/* A worker operation is one step; a silent failure leaves no body at all. */
static int worker_op(json_t **out)
{
	sbx_error_t err = NULL;
	if (fails(&err, "worker op"))
		return err != NULL ? sbx_op_fail(&err, out) : -1;
	*out = json_object();
	return 0;
}

#define WORKER_OP(name)                                                        \
	static int worker_##name(struct sbx_adapter *a, json_t *req, json_t **out) \
	{                                                                      \
		return worker_op(out);                                         \
	}
WORKER_OP(prepare)
WORKER_OP(start)
WORKER_OP(status)
WORKER_OP(logs)
WORKER_OP(stop)
WORKER_OP(destroy)

static const struct sbx_worker_ops worker_ops = { worker_prepare, worker_start, worker_status,
						  worker_logs,    worker_stop,  worker_destroy };

/* One request per function; an empty sandbox_id becomes a live sandbox's. */
static const struct {
	const char *op, *payload;
} requests[] = {
	{ "adapter::info", "{}" },
	{ "catalog::list", "{}" },
	{ "create", "{\"image\":\"python\"}" },
	{ "exec", "{\"sandbox_id\":\"\",\"cmd\":\"true\",\"stdin\":\"eA==\"}" },
	{ "stop", "{\"sandbox_id\":\"\"}" },
	{ "list", "{}" },
	{ "run", "{\"image\":\"python\",\"code\":\"print(1)\",\"lang\":\"python\",\"files\":[{\"path\":\"/a\","
		 "\"content\":\"b\"}]}" },
	{ "fs::ls", "{\"sandbox_id\":\"\",\"path\":\"/tmp\"}" },
	{ "fs::stat", "{\"sandbox_id\":\"\",\"path\":\"/tmp\"}" },
	{ "fs::mkdir", "{\"sandbox_id\":\"\",\"path\":\"/tmp/d\"}" },
	{ "fs::rm", "{\"sandbox_id\":\"\",\"path\":\"/tmp/d\"}" },
	{ "fs::chmod", "{\"sandbox_id\":\"\",\"path\":\"/tmp/d\",\"mode\":\"0755\"}" },
	{ "fs::mv", "{\"sandbox_id\":\"\",\"src\":\"/a\",\"dst\":\"/b\"}" },
	{ "fs::grep", "{\"sandbox_id\":\"\",\"path\":\"/tmp\",\"pattern\":\"x\"}" },
	{ "fs::sed", "{\"sandbox_id\":\"\",\"files\":[\"/a\"],\"pattern\":\"x\",\"replacement\":\"y\"}" },
	{ "fs::write", "{\"sandbox_id\":\"\",\"path\":\"/work/main.py\",\"content\":\"print(1)\\n\"}" },
	{ "fs::read", "{\"sandbox_id\":\"\",\"path\":\"/a\"}" },
	{ "worker::prepare", "{\"auth\":\"" TOKEN "\",\"worker\":\"w\",\"host_path\":\"/p\"}" },
	{ "worker::start", "{\"auth\":\"" TOKEN "\",\"worker\":\"w\"}" },
	{ "worker::status", "{\"auth\":\"" TOKEN "\",\"worker\":\"w\"}" },
	{ "worker::logs", "{\"auth\":\"" TOKEN "\",\"worker\":\"w\"}" },
	{ "worker::stop", "{\"auth\":\"" TOKEN "\",\"worker\":\"w\"}" },
	{ "worker::destroy", "{\"auth\":\"" TOKEN "\",\"worker\":\"w\"}" },
};

static struct sbx_adapter *make(void)
{
	json_t *v = json_pack("{s:[s]}", "image_allowlist", "python");
	sbx_error_t err = NULL;
	struct sbx_config *cfg = v != NULL ? sbx_config_parse(v, &err) : NULL;
	json_decref(v);
	struct sbx_adapter *a = cfg != NULL ? sbx_adapter_new(cfg, &err) : NULL;
	if (a != NULL && sbx_adapter_use_backend(a, &backend, NULL, &err) < 0) {
		sbx_adapter_free(a);
		a = NULL;
	}
	sbx_error_free(&err);
	if (a != NULL) {
		a->fs = (struct sbx_fs_host){ &fs_ops, NULL };
		a->workers = &worker_ops;
	}
	return a;
}

/* Sets *why to "" when the error body `out` states a cause, else to what
 * it lacks. */
static void check_cause(json_t *out, char *why, size_t len)
{
	const char *code = json_string_value(json_object_get(out, "code"));
	const char *m = json_string_value(json_object_get(out, "message"));
	why[0] = '\0';
	if (code == NULL || strcmp(code, "invocation_failed") != 0 || m == NULL) {
		snprintf(why, len, "not an error body");
		return;
	}
	if (strncmp(m, "serialization error: ", 21) == 0) {
		if (m[21] == '\0')
			snprintf(why, len, "empty decode error");
		return;
	}
	if (strncmp(m, "handler error: ", 15) != 0) {
		snprintf(why, len, "unknown body: %s", m);
		return;
	}
	json_t *env = json_loads(m + 15, 0, NULL);
	const char *sc = json_string_value(json_object_get(env, "code"));
	const char *msg = json_string_value(json_object_get(env, "message"));
	const struct sbx_scode *known = sc != NULL ? sbx_scode_find(sc) : NULL;
	size_t n = msg != NULL ? strlen(msg) : 0;
	if (known == NULL || n <= strlen(known->prefix) || (n >= 2 && strcmp(msg + n - 2, ": ") == 0))
		snprintf(why, len, "no cause: %s", m + 15);
	json_decref(env);
}

/* Runs request i with call `fail_at` failing; false once no call failed.
 * *bad names what a failing reply lacks, "" when it has its cause. */
static bool run_injected(size_t i, int fail_at, bool silent, char *bad, size_t len, char *text, size_t tlen)
{
	bad[0] = text[0] = '\0';
	struct sbx_adapter *a = make();
	if (a == NULL)
		return snprintf(bad, len, "no adapter"), false;
	inj.thread = pthread_self();
	inj.fail_at = -1;
	json_t *out = NULL;
	char id[64] = "";
	json_t *req = json_pack("{s:s}", "image", "python");
	if (sbx_adapter_call(a, "create", req, &out) == 0)
		snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(out, "sandbox_id")));
	json_decref(req);
	json_decref(out);
	req = json_loads(requests[i].payload, 0, NULL);
	if (json_object_get(req, "sandbox_id") != NULL)
		json_object_set_new(req, "sandbox_id", json_string(id));
	inj.steps = 0;
	inj.silent = silent;
	inj.fail_at = fail_at;
	int rc = sbx_adapter_call(a, requests[i].op, req, &out);
	bool failed_one = inj.steps > fail_at;
	inj.fail_at = -1;
	if (rc < 0)
		check_cause(out, bad, len);
	const char *m = json_string_value(json_object_get(out, "message"));
	snprintf(text, tlen, "%s", rc < 0 && m != NULL ? m : "");
	json_decref(out);
	json_decref(req);
	sbx_adapter_free(a);
	return failed_one;
}

static void every_failure_has_a_cause(bool silent)
{
	size_t n;
	sbx_ops(&n);
	CHECK_INT(n, sizeof(requests) / sizeof(requests[0]));
	for (size_t i = 0; i < n; i++) {
		CHECK(sbx_op_find(requests[i].op) != NULL);
		int injected = 0;
		for (int at = 0; at < MAX_STEPS; at++) {
			char bad[512], text[512];
			bool failed_one = run_injected(i, at, silent, bad, sizeof(bad), text, sizeof(text));
			if (bad[0] != '\0')
				sbx_test_fail(__FILE__, __LINE__, "%s, call %d failing%s: %s", requests[i].op, at,
					      silent ? " silently" : "", bad);
			if (!failed_one)
				break;
			injected++;
		}
		/* Each request reaches the fakes, but for those that need no VM
		 * and stop, whose one VM call cannot fail. */
		const char *op = requests[i].op;
		bool local = strcmp(op, "adapter::info") == 0 || strcmp(op, "catalog::list") == 0 ||
			     strcmp(op, "list") == 0 || strcmp(op, "stop") == 0;
		if (!local && injected == 0)
			sbx_test_fail(__FILE__, __LINE__, "%s never reached a fake call", op);
	}
}

TEST(every_failing_call_states_its_cause)
{
	every_failure_has_a_cause(false);
}

TEST(a_failure_without_an_error_becomes_an_internal_error_naming_the_function)
{
	every_failure_has_a_cause(true);
	size_t write_op = 0;
	while (strcmp(requests[write_op].op, "fs::write") != 0)
		write_op++;
	char bad[512], text[512];
	bool seen = false;
	for (int at = 0; at < MAX_STEPS && !seen; at++) {
		if (!run_injected(write_op, at, true, bad, sizeof(bad), text, sizeof(text)))
			break;
		seen = strstr(text, "internal error: sandbox-libkrun::fs::write failed without giving a cause") != NULL;
	}
	CHECK(seen);
	/* A handler that fails without even an error body gets one. */
	char wtext[512];
	size_t prepare = 0;
	while (strcmp(requests[prepare].op, "worker::prepare") != 0)
		prepare++;
	CHECK(run_injected(prepare, 0, true, bad, sizeof(bad), wtext, sizeof(wtext)));
	CHECK_STR(bad, "");
	CHECK(strstr(wtext, "sandbox-libkrun::worker::prepare failed without giving a cause") != NULL);
}

__attribute__((constructor)) static void set_token(void)
{
	setenv("III_SANDBOX_WORKER_TOKEN", TOKEN, 1);
}
