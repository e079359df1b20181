/* adapter::info's `capacity` over a fake backend: the registry's and the
 * memory budget's numbers as creates and stops move them, what the
 * backend's capacity op tells, and its absence. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "adapter/adapter.h"
#include "adapter_call.h"
#include "harness.h"

static bool fail_capacity;
static uint64_t templates_held_mib;

static void *fake_boot(void *ctx, const struct sbx_boot_request *req, sbx_error_t *err)
{
	return calloc(1, 1);
}

static void fake_stop(void *vm)
{
	free(vm);
}

static uint64_t fake_templates_mib(void *ctx)
{
	return templates_held_mib;
}

static int fake_capacity(void *ctx, struct sbx_backend_capacity *c, sbx_error_t *err)
{
	if (fail_capacity)
		return sbx_error_errno(err, ENOMEM, "images_cached");
	c->images_cached = json_pack("[s, s]", "python", "pg17");
	c->pool_ready = 2;
	c->standby_ready = true;
	c->kvm = true;
	return c->images_cached != NULL ? 0 : sbx_error_errno(err, ENOMEM, "images_cached");
}

static const struct sbx_backend_ops with_capacity = { .boot = fake_boot, .stop = fake_stop,
						       .templates_mib = fake_templates_mib,
						       .capacity = fake_capacity };
static const struct sbx_backend_ops without_capacity = { .boot = fake_boot, .stop = fake_stop };

#define CFG                                                                                                 \
	"{\"image_allowlist\":[\"python\"],\"max_concurrent_sandboxes\":5,\"memory_budget_mb\":4000,"      \
	"\"default_memory_mb\":256,\"tcg_cache_mb\":32}"

static struct sbx_adapter *make(const struct sbx_backend_ops *ops)
{
	json_t *v = json_loads(CFG, 0, NULL);
	sbx_error_t err = NULL;
	struct sbx_config *cfg = sbx_config_parse(v, &err);
	json_decref(v);
	struct sbx_adapter *a = cfg != NULL ? sbx_adapter_new(cfg, &err) : NULL;
	if (a != NULL && sbx_adapter_use_backend(a, ops, NULL, &err) < 0) {
		sbx_adapter_free(a);
		a = NULL;
	}
	sbx_error_free(&err);
	return a;
}

/* adapter::info's capacity, compact. */
static char *capacity(struct sbx_adapter *a)
{
	json_t *r = adapter_call_json(a, "adapter::info", "{}");
	json_t *c = json_object_get(r, "capacity");
	char *s = c != NULL ? json_dumps(c, JSON_COMPACT) : NULL;
	json_decref(r);
	return s;
}

#define CHECK_CAPACITY(a, want)                                                                              \
	do {                                                                                                 \
		char *_s = capacity(a);                                                                      \
		CHECK_STR(_s, want);                                                                         \
		free(_s);                                                                                    \
	} while (0)

TEST(capacity_follows_creates_and_stops)
{
	templates_held_mib = 0;
	fail_capacity = false;
	struct sbx_adapter *a = make(&with_capacity);
	CHECK(a != NULL);
	/* sandbox_default: 256 MiB of guest RAM, 64 for QEMU, 32 of translation cache. */
	CHECK_CAPACITY(a, "{\"sandboxes\":{\"live\":0,\"max\":5},\"memory_mib\":{\"committed\":0,\"budget\":4000,"
			  "\"sandbox_default\":352},\"images_cached\":[\"python\",\"pg17\"],\"pool_ready\":2,"
			  "\"standby_ready\":true,\"kvm\":true}");
	json_t *r = adapter_call_json(a, "create", "{\"image\":\"python\"}");
	char id[64];
	snprintf(id, sizeof(id), "%s", jstr(r, "sandbox_id") != NULL ? jstr(r, "sandbox_id") : "");
	json_decref(r);
	/* A create of 512 MiB with a network: its VM and the helper's 8 MiB;
	 * the templates as that create measured them count too. */
	templates_held_mib = 100;
	r = adapter_call_json(a, "create", "{\"image\":\"python\",\"memory_mb\":512,\"network\":true}");
	CHECK(jstr(r, "sandbox_id") != NULL);
	json_decref(r);
	CHECK_CAPACITY(a, "{\"sandboxes\":{\"live\":2,\"max\":5},\"memory_mib\":{\"committed\":1068,\"budget\":4000,"
			  "\"sandbox_default\":352},\"images_cached\":[\"python\",\"pg17\"],\"pool_ready\":2,"
			  "\"standby_ready\":true,\"kvm\":true}");
	r = adapter_callf(a, "stop", "{\"sandbox_id\":\"%s\"}", id);
	CHECK(json_is_true(json_object_get(r, "stopped")));
	json_decref(r);
	char *s = capacity(a);
	json_t *c = json_loads(s, 0, NULL);
	CHECK_INT(json_integer_value(json_object_get(json_object_get(c, "sandboxes"), "live")), 1);
	CHECK_INT(json_integer_value(json_object_get(json_object_get(c, "memory_mib"), "committed")), 716);
	json_decref(c);
	free(s);
	sbx_adapter_free(a);
}

TEST(capacity_without_the_backend_op_reports_nothing_waiting)
{
	struct sbx_adapter *a = make(&without_capacity);
	CHECK(a != NULL);
	CHECK_CAPACITY(a, "{\"sandboxes\":{\"live\":0,\"max\":5},\"memory_mib\":{\"committed\":0,\"budget\":4000,"
			  "\"sandbox_default\":352},\"images_cached\":[],\"pool_ready\":0,\"standby_ready\":false,"
			  "\"kvm\":false}");
	sbx_adapter_free(a);
}

TEST(capacity_keeps_the_contract_fields_and_its_schema)
{
	fail_capacity = false;
	struct sbx_adapter *a = make(&with_capacity);
	CHECK(a != NULL);
	json_t *r = adapter_call_json(a, "adapter::info", "{}");
	CHECK_STR(jstr(r, "adapter"), "sandbox-libkrun");
	CHECK_INT(json_array_size(json_object_get(r, "extensions")), 13);
	CHECK_INT(json_object_size(r), 5);
	json_decref(r);
	/* The published schema knows the member; callers need not. */
	json_t *schema = json_loads(sbx_op_find("adapter::info")->response_schema, 0, NULL);
	json_t *props = json_object_get(json_object_get(schema, "properties"), "capacity");
	CHECK(json_is_object(json_object_get(props, "properties")));
	CHECK_INT(json_array_size(json_object_get(props, "required")), 6);
	json_t *req = json_object_get(schema, "required");
	for (size_t i = 0; i < json_array_size(req); i++)
		CHECK(strcmp(json_string_value(json_array_get(req, i)), "capacity") != 0);
	json_decref(schema);
	sbx_adapter_free(a);
}

TEST(capacity_failing_fails_the_call)
{
	fail_capacity = true;
	struct sbx_adapter *a = make(&with_capacity);
	CHECK(a != NULL);
	json_t *r = adapter_call_json(a, "adapter::info", "{}");
	CHECK(jstr(r, "code") != NULL);
	CHECK(jstr(r, "adapter") == NULL);
	json_decref(r);
	fail_capacity = false;
	sbx_adapter_free(a);
}
