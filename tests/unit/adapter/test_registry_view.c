/* The operator's view of the registry: a create in progress shows as
 * "creating" (never in the contract's list), hands its shape to the record
 * it becomes, and goes when it fails. */
#include <jansson.h>

#include "adapter/sandbox_registry.h"
#include "harness.h"

#define ID_A "11111111-1111-4111-8111-111111111111"
#define ID_B "22222222-2222-4222-8222-222222222222"

static const char *state_of(json_t *rows, const char *id)
{
	size_t i;
	json_t *r;
	json_array_foreach(rows, i, r) {
		if (strcmp(json_string_value(json_object_get(r, "sandbox_id")), id) == 0)
			return json_string_value(json_object_get(r, "state"));
	}
	return NULL;
}

static size_t listed(struct sbx_registry *reg)
{
	json_t *l = sbx_registry_list(reg, 1);
	size_t n = json_array_size(json_object_get(l, "sandboxes"));
	json_decref(l);
	return n;
}

static void add_pid(void *vm, json_t *row, void *ud)
{
	json_object_set_new(row, "pid", json_integer(*(int *)vm));
	(*(int *)ud)++;
}

TEST(creating_shows_in_rows_not_in_list)
{
	sbx_error_t err = NULL;
	struct sbx_registry *reg = sbx_registry_new(&err);
	CHECK(reg != NULL);
	CHECK_INT(sbx_registry_creating_begin(reg, ID_A, "web", "python", 2, 768, true, &err), 0);
	json_t *rows = sbx_registry_rows(reg, NULL, NULL);
	CHECK_INT(json_array_size(rows), 1);
	CHECK_STR(state_of(rows, ID_A), "creating");
	json_t *r = json_array_get(rows, 0);
	CHECK_STR(json_string_value(json_object_get(r, "name")), "web");
	CHECK_INT(json_integer_value(json_object_get(r, "cpus")), 2);
	CHECK(json_is_true(json_object_get(r, "network")));
	json_decref(rows);
	CHECK_INT(listed(reg), 0);
	CHECK_INT(sbx_registry_count(reg), 0);
	/* Per-sandbox calls do not see it either. */
	CHECK(sbx_registry_acquire(reg, ID_A, &err) == NULL);
	sbx_error_free(&err);
	sbx_registry_free(reg);
}

TEST(insert_takes_the_shape_and_ends_creating)
{
	sbx_error_t err = NULL;
	struct sbx_registry *reg = sbx_registry_new(&err);
	CHECK(reg != NULL);
	int pid = 4242, calls = 0;
	CHECK_INT(sbx_registry_creating_begin(reg, ID_A, NULL, "node", 3, 1024, false, &err), 0);
	CHECK_INT(sbx_registry_insert_vm(reg, ID_A, NULL, "node", 60, &pid, 0, &err), 0);
	json_t *rows = sbx_registry_rows(reg, add_pid, &calls);
	CHECK_INT(json_array_size(rows), 1);
	CHECK_STR(state_of(rows, ID_A), "running");
	json_t *r = json_array_get(rows, 0);
	CHECK_INT(json_integer_value(json_object_get(r, "memory_mb")), 1024);
	CHECK_INT(json_integer_value(json_object_get(r, "cpus")), 3);
	CHECK_INT(json_integer_value(json_object_get(r, "pid")), 4242);
	CHECK_INT(calls, 1);
	json_decref(rows);
	CHECK_INT(listed(reg), 1);
	bool was;
	CHECK_INT(sbx_registry_claim_stop(reg, ID_A, &was, &err), 0);
	rows = sbx_registry_rows(reg, add_pid, &calls);
	CHECK_STR(state_of(rows, ID_A), "stopping");
	CHECK_INT(calls, 1);
	json_decref(rows);
	uint64_t mem;
	CHECK(sbx_registry_detach(reg, ID_A, &mem) == &pid);
	sbx_registry_free(reg);
}

TEST(failed_create_leaves_no_row)
{
	sbx_error_t err = NULL;
	struct sbx_registry *reg = sbx_registry_new(&err);
	CHECK(reg != NULL);
	CHECK_INT(sbx_registry_creating_begin(reg, ID_A, NULL, "python", 1, 512, false, &err), 0);
	CHECK_INT(sbx_registry_creating_begin(reg, ID_B, NULL, "python", 1, 512, false, &err), 0);
	sbx_registry_creating_end(reg, ID_A);
	sbx_registry_creating_end(reg, ID_A);
	json_t *rows = sbx_registry_rows(reg, NULL, NULL);
	CHECK_INT(json_array_size(rows), 1);
	CHECK(state_of(rows, ID_A) == NULL);
	CHECK_STR(state_of(rows, ID_B), "creating");
	json_decref(rows);
	/* One still in progress is freed with the registry (ASan checks). */
	sbx_registry_free(reg);
}
