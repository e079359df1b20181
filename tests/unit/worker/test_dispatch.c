/* The worker::* dispatcher: the token before anything else, then the
 * shape, then the operation of the right slot; S300 without operations. */
#include <stdlib.h>
#include <string.h>

#include "adapter/adapter.h"
#include "harness.h"

static const char *called;

#define FAKE(name)                                                                 \
	static int fake_##name(struct sbx_adapter *a, json_t *req, json_t **out) \
	{                                                                          \
		called = #name;                                                    \
		*out = json_pack("{s:s}", "op", #name);                            \
		return 0;                                                          \
	}
FAKE(prepare)
FAKE(start)
FAKE(status)
FAKE(logs)
FAKE(stop)
FAKE(destroy)

static const struct sbx_worker_ops fakes = { fake_prepare, fake_start, fake_status,
					     fake_logs,    fake_stop,  fake_destroy };

static struct sbx_adapter *adapter(const char *token, bool with_ops)
{
	sbx_error_t err = NULL;
	if (token != NULL)
		setenv("III_SANDBOX_WORKER_TOKEN", token, 1);
	else
		unsetenv("III_SANDBOX_WORKER_TOKEN");
	struct sbx_adapter *a = sbx_adapter_new(sbx_config_defaults(&err), &err);
	if (a == NULL)
		abort();
	a->workers = with_ops ? &fakes : NULL;
	return a;
}

/* The S-code of an error body, or "" (into a static buffer). */
static const char *scode_of(json_t *body)
{
	static char code[8];
	const char *m = json_string_value(json_object_get(body, "message"));
	const char *at = m != NULL ? strstr(m, "\"code\":\"") : NULL;
	code[0] = '\0';
	if (at != NULL)
		snprintf(code, sizeof(code), "%.4s", at + 8);
	return code;
}

static int call(struct sbx_adapter *a, const char *op, const char *req_text, json_t **out)
{
	json_t *req = req_text != NULL ? json_loads(req_text, JSON_DECODE_ANY, NULL) : NULL;
	called = NULL;
	int rc = sbx_adapter_call(a, op, req, out);
	json_decref(req);
	return rc;
}

TEST(each_op_reaches_its_slot)
{
	struct sbx_adapter *a = adapter("s3cret", true);
	const char *ops[] = { "prepare", "start", "status", "logs", "stop", "destroy" };
	for (size_t i = 0; i < 6; i++) {
		char op[32];
		snprintf(op, sizeof(op), "worker::%s", ops[i]);
		json_t *out = NULL;
		CHECK_INT(call(a, op, "{\"auth\":\"s3cret\",\"worker\":\"w\"}", &out), 0);
		CHECK_STR(called, ops[i]);
		CHECK_STR(json_string_value(json_object_get(out, "op")), ops[i]);
		json_decref(out);
	}
	sbx_adapter_free(a);
}

TEST(token_is_checked_before_the_shape)
{
	struct sbx_adapter *a = adapter("s3cret", true);
	const char *bad[] = { NULL, "5", "{}", "{\"auth\":\"wrong\",\"worker\":\"w\"}", "{\"auth\":\"s3cre\"}",
			      "{\"auth\":\"s3cret\\u0000x\",\"worker\":\"w\"}", "{\"auth\":7}" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *out = NULL;
		CHECK_INT(call(a, "worker::status", bad[i], &out), -1);
		CHECK_STR(scode_of(out), "S505");
		CHECK(called == NULL);
		CHECK(strstr(json_string_value(json_object_get(out, "message")), "s3cret") == NULL);
		json_decref(out);
	}
	sbx_adapter_free(a);
}

TEST(unset_or_empty_token_refuses_everything)
{
	const char *tokens[] = { NULL, "" };
	for (size_t i = 0; i < 2; i++) {
		struct sbx_adapter *a = adapter(tokens[i], true);
		json_t *out = NULL;
		CHECK_INT(call(a, "worker::prepare", "{\"auth\":\"\",\"worker\":\"w\"}", &out), -1);
		CHECK_STR(scode_of(out), "S505");
		CHECK(called == NULL);
		json_decref(out);
		sbx_adapter_free(a);
	}
}

TEST(worker_must_be_a_string)
{
	struct sbx_adapter *a = adapter("s3cret", true);
	json_t *out = NULL;
	CHECK_INT(call(a, "worker::stop", "{\"auth\":\"s3cret\",\"worker\":3}", &out), -1);
	CHECK(strstr(json_string_value(json_object_get(out, "message")), "serialization error: ") != NULL);
	CHECK(called == NULL);
	json_decref(out);
	CHECK_INT(call(a, "worker::stop", "{\"auth\":\"s3cret\"}", &out), -1);
	CHECK(strstr(json_string_value(json_object_get(out, "message")), "missing field `worker`") != NULL);
	json_decref(out);
	sbx_adapter_free(a);
}

TEST(without_operations_s300)
{
	struct sbx_adapter *a = adapter("s3cret", false);
	json_t *out = NULL;
	CHECK_INT(call(a, "worker::prepare", "{\"auth\":\"s3cret\",\"worker\":\"w\"}", &out), -1);
	CHECK_STR(scode_of(out), "S300");
	json_decref(out);
	sbx_adapter_free(a);
}
