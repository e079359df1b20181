/* The front's routing (front_route.c, front_forward.c, front_create.c)
 * against a stand-in engine whose members answer from a script: ids and
 * names kept apart, members' claims on other members' ids refused, the
 * worker token sent only to the worker's member, creates placed past a
 * full member, a gone member's S300, and the slots of long-gone members
 * freed.  No VM, no daemon. */
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/scodes.h"
#include "fake_engine.h"
#include "front/front_internal.h"
#include "harness.h"

#define VICTIM "3f2a9c1e-8b7d-4e5f-8a9b-0c1d2e3f4a5b"
#define ATTACKER "77777777-1111-4111-8111-111111111111"
#define LEARNT "55555555-5555-4555-8555-555555555555"
#define TOKEN "s3cret-token"

static struct fake_engine fe;

/* A front over the stand-in engine and its members, its table read once. */
static struct front *front_over(const char *pinned)
{
	sbx_error_t err = NULL;
	struct front *f = front_new(fe.e, NULL, pinned, &err);
	sbx_error_free(&err);
	if (f != NULL && front_refresh(f) < 0) {
		front_free(f);
		f = NULL;
	}
	return f;
}

static void front_down(struct front *f)
{
	front_free(f);
	fake_engine_stop(&fe);
}

/* Calls op through the front: 0 with *out, or -1 and *scode from the body. */
static int call(struct front *f, const char *op, const char *payload, json_t **out, char scode[8])
{
	char fn[128];
	snprintf(fn, sizeof(fn), "sandbox-libkrun::%s", op);
	struct engine_invocation inv = { .invocation_id = "11111111-0000-4000-8000-000000000000", .function_id = fn,
					 .engine = fe.e };
	json_t *data = json_loads(payload, 0, NULL);
	*out = NULL;
	int rc = front_handle(f, &inv, data, out);
	json_decref(data);
	scode[0] = '\0';
	if (rc < 0) {
		json_t *env = front_envelope(*out);
		const char *code = json_string_value(json_object_get(env, "code"));
		snprintf(scode, 8, "%s", code != NULL ? code : "?");
		json_decref(env);
	}
	return rc;
}

/* Which member answered an exec on id, or the S-code it got. */
static const char *exec_on(struct front *f, const char *id)
{
	static char who[64];
	char payload[128], scode[8];
	json_t *out;
	snprintf(payload, sizeof(payload), "{\"sandbox_id\":\"%s\",\"cmd\":\"true\"}", id);
	if (call(f, "exec", payload, &out, scode) == 0)
		snprintf(who, sizeof(who), "%s", json_string_value(json_object_get(out, "ns")));
	else
		snprintf(who, sizeof(who), "!%s", scode);
	json_decref(out);
	return who;
}

/* A caller names its sandbox after another member's sandbox id: calls for
 * that id still go to the member that holds it. */
TEST(a_name_equal_to_another_members_id_does_not_take_it)
{
	CHECK_INT(fake_engine_start(&fe), 0);
	fake_member_add(&fe, "m1", 8, "[{\"sandbox_id\":\"" VICTIM "\",\"name\":null}]");
	struct fake_member *m2 = fake_member_add(&fe, "m2", 8, "[]");
	snprintf(m2->create_id, sizeof(m2->create_id), "%s", ATTACKER);
	struct front *f = front_over("m2,m1");
	CHECK(f != NULL);
	CHECK_STR(exec_on(f, VICTIM), "m1");
	json_t *out;
	char scode[8];
	CHECK_INT(call(f, "create", "{\"image\":\"python\",\"name\":\"" VICTIM "\"}", &out, scode), 0);
	CHECK_STR(json_string_value(json_object_get(out, "sandbox_id")), ATTACKER);
	json_decref(out);
	CHECK_STR(exec_on(f, VICTIM), "m1");
	CHECK_STR(exec_on(f, ATTACKER), "m2");
	/* A create with that name again is placed by room, not sent after the
	 * name. */
	CHECK_INT(fake_calls(&fe, "m1", "exec", NULL), 2);
	front_down(f);
}

/* A hostile member lists the ids of another member's sandboxes: it gets
 * none of their calls (their exec and fs::write payloads). */
TEST(a_member_listing_another_members_ids_gets_none_of_their_calls)
{
	CHECK_INT(fake_engine_start(&fe), 0);
	struct fake_member *m1 = fake_member_add(&fe, "m1", 8, "[{\"sandbox_id\":\"" LEARNT "\"}]");
	snprintf(m1->create_id, sizeof(m1->create_id), "%s", VICTIM);
	struct fake_member *m2 = fake_member_add(&fe, "m2", 0, "[]");
	struct front *f = front_over("m1,m2");
	CHECK(f != NULL);
	json_t *out;
	char scode[8];
	CHECK_INT(call(f, "create", "{\"image\":\"python\"}", &out, scode), 0);
	json_decref(out);
	/* m2 now lists both of m1's ids (and answers a create with one). */
	pthread_mutex_lock(&fe.lock);
	json_decref(m2->rows);
	m2->rows = json_loads("[{\"sandbox_id\":\"" VICTIM "\"},{\"sandbox_id\":\"" LEARNT "\"}]", 0, NULL);
	json_decref(m1->rows);
	m1->rows = json_loads("[{\"sandbox_id\":\"" VICTIM "\"},{\"sandbox_id\":\"" LEARNT "\"}]", 0, NULL);
	pthread_mutex_unlock(&fe.lock);
	CHECK_INT(front_refresh(f), 0);
	fake_log_clear(&fe);
	/* Placed through this front on m1: m1's. */
	CHECK_STR(exec_on(f, VICTIM), "m1");
	CHECK_INT(call(f, "fs::write", "{\"sandbox_id\":\"" VICTIM "\",\"path\":\"/a\",\"content\":\"x\"}", &out, scode),
		  0);
	json_decref(out);
	/* Only learnt from lists, and listed by both: neither gets it. */
	CHECK_STR(exec_on(f, LEARNT), "!" SBX_S_NOT_FOUND);
	CHECK_INT(fake_calls(&fe, "m2", "exec", NULL) + fake_calls(&fe, "m2", "fs::write", NULL), 0);
	CHECK_INT(fake_calls(&fe, "m1", "fs::write", NULL), 1);
	front_down(f);
}

/* The caller's worker token goes to the member that holds the worker,
 * and, for a worker the front did not place, to no discovered member. */
TEST(the_worker_token_goes_only_to_the_workers_member)
{
	CHECK_INT(fake_engine_start(&fe), 0);
	fake_member_add(&fe, "m1", 8, "[]");
	fake_member_add(&fe, "m2", 0, "[]");
	struct front *f = front_over(NULL);
	CHECK(f != NULL);
	json_t *out;
	char scode[8];
	CHECK_INT(call(f, "worker::prepare", "{\"auth\":\"" TOKEN "\",\"worker\":\"w\"}", &out, scode), 0);
	json_decref(out);
	CHECK_INT(call(f, "worker::status", "{\"auth\":\"" TOKEN "\",\"worker\":\"w\"}", &out, scode), 0);
	CHECK_STR(json_string_value(json_object_get(out, "ns")), "m1");
	json_decref(out);
	CHECK_INT(fake_calls(&fe, "m2", "worker::prepare", "auth") + fake_calls(&fe, "m2", "worker::status", "auth"), 0);
	front_free(f);
	/* A front that takes over knows no worker: with discovered members it
	 * asks none of them. */
	fake_log_clear(&fe);
	f = front_over(NULL);
	CHECK(f != NULL);
	CHECK_INT(call(f, "worker::status", "{\"auth\":\"" TOKEN "\",\"worker\":\"w\"}", &out, scode), -1);
	CHECK_STR(scode, SBX_S_NOT_PREPARED);
	json_decref(out);
	CHECK_INT(fake_calls(&fe, "m1", "worker::status", NULL) + fake_calls(&fe, "m2", "worker::status", NULL), 0);
	front_free(f);
	/* Pinned members, named by the operator, are asked. */
	f = front_over("m1,m2");
	CHECK(f != NULL);
	CHECK_INT(call(f, "worker::status", "{\"auth\":\"" TOKEN "\",\"worker\":\"w\"}", &out, scode), 0);
	CHECK_STR(json_string_value(json_object_get(out, "ns")), "m1");
	json_decref(out);
	front_down(f);
}

/* create: the member with room first; one that answers S400 is passed
 * over for the next; every member full is S400 naming each. */
TEST(creates_skip_a_full_member)
{
	CHECK_INT(fake_engine_start(&fe), 0);
	fake_member_add(&fe, "m1", 8, "[]"); /* room, but answers S400 */
	struct fake_member *m2 = fake_member_add(&fe, "m2", 4, "[]");
	snprintf(m2->create_id, sizeof(m2->create_id), "%s", ATTACKER);
	struct front *f = front_over("m1,m2");
	CHECK(f != NULL);
	json_t *out;
	char scode[8];
	CHECK_INT(call(f, "create", "{\"image\":\"python\"}", &out, scode), 0);
	CHECK_STR(json_string_value(json_object_get(out, "sandbox_id")), ATTACKER);
	json_decref(out);
	CHECK_INT(fake_calls(&fe, "m1", "create", NULL), 1);
	CHECK_STR(exec_on(f, ATTACKER), "m2");
	m2->create_id[0] = '\0';
	CHECK_INT(call(f, "create", "{\"image\":\"python\"}", &out, scode), -1);
	CHECK_STR(scode, SBX_S_LIMIT);
	json_t *env = front_envelope(out);
	const char *msg = json_string_value(json_object_get(env, "message"));
	CHECK(msg != NULL && strstr(msg, "m1: ") != NULL && strstr(msg, "m2: ") != NULL);
	json_decref(env);
	json_decref(out);
	front_down(f);
}

/* A member the engine says is gone: its sandboxes answer S300 naming it,
 * and it is marked down at once. */
TEST(a_gone_members_sandboxes_answer_s300)
{
	CHECK_INT(fake_engine_start(&fe), 0);
	struct fake_member *m1 = fake_member_add(&fe, "m1", 8, "[{\"sandbox_id\":\"" VICTIM "\"}]");
	struct front *f = front_over("m1");
	CHECK(f != NULL);
	pthread_mutex_lock(&fe.lock);
	m1->answers = false;
	pthread_mutex_unlock(&fe.lock);
	json_t *out;
	char scode[8];
	CHECK_INT(call(f, "exec", "{\"sandbox_id\":\"" VICTIM "\",\"cmd\":\"true\"}", &out, scode), -1);
	CHECK_STR(scode, SBX_S_VM_BOOT);
	json_t *env = front_envelope(out);
	CHECK(strstr(json_string_value(json_object_get(env, "message")), "member m1") != NULL);
	json_decref(env);
	json_decref(out);
	pthread_mutex_lock(&f->lock);
	CHECK(!f->members[0].up);
	pthread_mutex_unlock(&f->lock);
	front_down(f);
}

/* 64 namespaces that came and went fill the table; once gone longer than
 * FRONT_SLOT_FREE_MS their slots are freed and a new member gets one. */
TEST(the_slots_of_long_gone_members_are_freed)
{
	CHECK_INT(fake_engine_start(&fe), 0);
	char ns[32];
	for (int i = 0; i < FRONT_MAX_MEMBERS; i++) {
		snprintf(ns, sizeof(ns), "gone%d", i);
		fake_member_add(&fe, ns, 1, "[]")->answers = false;
	}
	struct front *f = front_over(NULL);
	CHECK(f != NULL);
	CHECK_INT(f->nmembers, FRONT_MAX_MEMBERS);
	pthread_mutex_lock(&fe.lock);
	for (size_t i = 0; i < fe.nmembers; i++)
		fe.members[i].listed = false;
	pthread_mutex_unlock(&fe.lock);
	fake_member_add(&fe, "fresh", 8, "[]");
	/* Not yet gone long enough: no slot for it. */
	CHECK_INT(front_refresh(f), 0);
	CHECK(front_first_up(f) < 0);
	/* As if FRONT_SLOT_FREE_MS had passed since they were found. */
	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; i < f->nmembers; i++)
		f->members[i].down_since_ms = sbx_now_ms() - FRONT_SLOT_FREE_MS - FRONT_GRACE_MS - 1;
	pthread_mutex_unlock(&f->lock);
	CHECK_INT(front_refresh(f), 0); /* forgotten, then freed */
	CHECK_INT(front_refresh(f), 0); /* fresh takes a slot */
	long up = front_first_up(f);
	CHECK(up >= 0);
	CHECK_STR(f->members[up].ns, "fresh");
	front_down(f);
}
