/* The calls that name their target: a sandbox (by id or name) or a
 * worker goes to its owner; list merges every member's; adapter::info and
 * catalog::list answer as one adapter. */
#include <string.h>

#include "adapter/adapter.h"
#include "common/cleanup_json.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/log_limit.h"
#include "common/scodes.h"
#include "common/uuid.h"
#include "front/front_internal.h"

static int no_member(json_t **out)
{
	return front_fail(SBX_S_VM_BOOT, out,
			  "no member adapter is reachable: no namespace shows %s::adapter::info to the engine (start "
			  "`sandbox-libkrun serve` with III_NAMESPACE set on each host)",
			  SBX_WORKER_NAME);
}

/* Forwards to the first member up (any member answers alike, or judges a
 * request it cannot place, e.g. S002 for an id nobody has). */
int front_to_any(struct front *f, const struct engine_invocation *inv, const char *op, json_t *data, json_t **out)
{
	long m = front_first_up(f);
	if (m < 0 && front_refresh_for_call(f) == 0)
		m = front_first_up(f);
	if (m < 0)
		return no_member(out);
	char scode[8];
	return front_forward(f, inv, (size_t)m, op, data, FRONT_CALL_TIMEOUT_MS, out, scode) == FRONT_FWD_OK ? 0 : -1;
}

/* 1: key's owner is in *member and up; 0: unknown; -1: *out is the S300 of
 * an owner that left, the S002 of one forgotten (an id this front placed
 * there, which no other member may take) or of an id two members list. */
static int owner_of(struct front *f, struct front_owners *map, const char *key, size_t *member, json_t **out)
{
	long rival;
	pthread_mutex_lock(&f->lock);
	bool known = front_owners_find(map, key, member, &rival);
	const struct front_member *m = known || rival >= 0 ? &f->members[*member] : NULL;
	bool up = m != NULL && m->up, forgotten = m != NULL && m->forgotten;
	int64_t gone_s = m != NULL && !up ? (sbx_now_ms() - m->down_since_ms) / 1000 : 0;
	char ns[FRONT_NS_MAX + 1] = "", other[FRONT_NS_MAX + 1] = "";
	if (m != NULL)
		memcpy(ns, m->ns, sizeof(ns));
	if (rival >= 0)
		memcpy(other, f->members[rival].ns, sizeof(other));
	pthread_mutex_unlock(&f->lock);
	if (rival >= 0)
		return front_fail(SBX_S_NOT_FOUND, out,
				  "%.256s: members %s and %s both list it; this front did not place it, so it goes to "
				  "neither",
				  key, ns, other);
	if (!known)
		return 0;
	if (up)
		return 1;
	if (forgotten)
		return front_fail(SBX_S_NOT_FOUND, out, "%.256s (its member %s left the engine %llds ago)", key, ns,
				  (long long)gone_s);
	return front_fail(SBX_S_VM_BOOT, out,
			  "%.256s is on member %s, which left the engine %llds ago; it is forgotten (S002) %d s after "
			  "leaving, and reachable again if the member comes back with it",
			  key, ns, (long long)gone_s, FRONT_GRACE_MS / 1000);
}

static int route_sandbox(struct front *f, const struct engine_invocation *inv, const char *op, json_t *data,
			 json_t **out)
{
	const char *id = json_string_value(json_object_get(data, "sandbox_id"));
	/* The map holds ids as the members list them (canonical); a caller may
	 * write one in any form a member accepts (upper case, braces, urn). */
	char canon[SBX_UUID_STRLEN + 1];
	if (id != NULL && sbx_uuid_parse(id, canon))
		id = canon;
	size_t m;
	int known = id != NULL ? owner_of(f, &f->owners, id, &m, out) : 0;
	if (known < 0)
		return -1;
	/* Unknown: looked up once across the members (their lists are read
	 * again), then left to a member to judge. */
	if (known == 0 && id != NULL && front_refresh_for_call(f) == 0)
		known = owner_of(f, &f->owners, id, &m, out);
	if (known < 0)
		return -1;
	if (known == 0)
		return front_to_any(f, inv, op, data, out);
	char scode[8];
	if (front_forward(f, inv, m, op, data, FRONT_CALL_TIMEOUT_MS, out, scode) != FRONT_FWD_OK)
		return -1;
	if (strcmp(op, "stop") == 0) {
		pthread_mutex_lock(&f->lock);
		front_owners_remove(&f->owners, id);
		pthread_mutex_unlock(&f->lock);
	}
	return 0;
}

/* The member a worker was prepared on, asked of each member when the map
 * does not know it (after a front took over): 1 found, 0 not, -1 *out set
 * (the auth check's answer, which every member gives alike).  The question
 * carries the caller's worker token: only pinned members, which the
 * operator named, are asked; a discovered one could be anybody. */
static int find_worker(struct front *f, const struct engine_invocation *inv, json_t *data, size_t *member,
		       json_t **out)
{
	if (f->pinned == NULL)
		return 0;
	size_t up[FRONT_MAX_MEMBERS];
	size_t n = front_up_members(f, up);
	cleanup_json json_t *req = json_pack("{s:O*, s:O*}", "auth", json_object_get(data, "auth"), "worker",
					     json_object_get(data, "worker"));
	for (size_t k = 0; req != NULL && k < n; k++) {
		size_t i = up[k];
		json_t *res = NULL;
		char scode[8];
		enum front_fwd r = front_forward(f, inv, i, "worker::status", req, FRONT_INFO_TIMEOUT_MS, &res, scode);
		if (r == FRONT_FWD_ERROR && strcmp(scode, SBX_S_AUTH) == 0)
			return *out = res, -1;
		const char *state = r == FRONT_FWD_OK ? json_string_value(json_object_get(res, "state")) : NULL;
		bool here = state != NULL && strcmp(state, "absent") != 0;
		json_decref(res);
		if (here) {
			*member = i;
			return 1;
		}
	}
	return 0;
}

int front_worker_owner(struct front *f, const struct engine_invocation *inv, json_t *data, size_t *member,
		       json_t **out)
{
	const char *name = json_string_value(json_object_get(data, "worker"));
	if (name == NULL)
		return 0;
	int known = owner_of(f, &f->workers, name, member, out);
	if (known != 0)
		return known;
	known = find_worker(f, inv, data, member, out);
	if (known == 1) {
		pthread_mutex_lock(&f->lock);
		if (front_owners_set(&f->workers, name, *member) < 0)
			sbx_warn_limited("front: worker %.256s not mapped (looked up again when used)", name);
		pthread_mutex_unlock(&f->lock);
	}
	return known;
}

static int route_worker(struct front *f, const struct engine_invocation *inv, const char *op, json_t *data,
			json_t **out)
{
	size_t m;
	int known = front_worker_owner(f, inv, data, &m, out);
	if (known < 0)
		return -1;
	/* The caller's token goes to the worker's member only (or to a pinned
	 * member): a worker no discovered member is known to hold is answered
	 * here. */
	if (known == 0 && f->pinned == NULL && json_is_string(json_object_get(data, "worker")))
		return front_fail(SBX_S_NOT_PREPARED, out,
				  "worker %.256s is not known to this front: it was not prepared through it (a front "
				  "asks the members for a worker it did not place only when III_SANDBOX_MEMBERS pins "
				  "them)",
				  json_string_value(json_object_get(data, "worker")));
	if (known == 0)
		return front_to_any(f, inv, op, data, out);
	char scode[8];
	return front_forward(f, inv, m, op, data, FRONT_CALL_TIMEOUT_MS, out, scode) == FRONT_FWD_OK ? 0 : -1;
}

/* Every member's rows; a member that does not answer is left out (its
 * sandboxes answer S300 meanwhile). */
static int route_list(struct front *f, const struct engine_invocation *inv, json_t *data, json_t **out)
{
	size_t up[FRONT_MAX_MEMBERS];
	size_t n = front_up_members(f, up);
	if (n == 0)
		return front_to_any(f, inv, "list", data, out);
	cleanup_json json_t *all = json_array();
	for (size_t k = 0; all != NULL && k < n; k++) {
		json_t *res = NULL;
		char scode[8];
		enum front_fwd r = front_forward(f, inv, up[k], "list", data, FRONT_INFO_TIMEOUT_MS, &res, scode);
		if (r == FRONT_FWD_ERROR && strcmp(scode, SBX_S_INVALID_REQUEST) == 0)
			return *out = res, -1;
		json_t *rows = r == FRONT_FWD_OK ? json_object_get(res, "sandboxes") : NULL;
		if (rows != NULL && json_array_extend(all, rows) < 0)
			json_decref(all), all = NULL;
		json_decref(res);
	}
	*out = all != NULL ? json_pack("{s:O}", "sandboxes", all) : NULL;
	return *out != NULL ? 0 : front_fail(SBX_S_VM_BOOT, out, "out of memory merging the members' lists");
}

/* A member's answer (the same adapter everywhere) without its own
 * capacity, plus every member's. */
static int route_info(struct front *f, json_t **out)
{
	if (front_first_up(f) < 0)
		front_refresh_for_call(f);
	pthread_mutex_lock(&f->lock);
	json_t *info = NULL;
	cleanup_json json_t *members = json_array();
	for (size_t i = 0; members != NULL && i < f->nmembers; i++) {
		const struct front_member *m = &f->members[i];
		if (m->ns[0] == '\0')
			continue; /* a freed slot */
		if (info == NULL && m->up && m->info != NULL)
			info = json_deep_copy(m->info);
		json_t *cap = m->info != NULL ? json_object_get(m->info, "capacity") : NULL;
		json_t *row = json_pack("{s:s, s:b, s:O?}", "namespace", m->ns, "up", m->up, "capacity", cap);
		if (row == NULL || json_array_append_new(members, row) < 0)
			json_decref(members), members = NULL;
	}
	pthread_mutex_unlock(&f->lock);
	if (info == NULL)
		return no_member(out);
	json_object_del(info, "capacity");
	if (members == NULL || json_object_set(info, "members", members) < 0) {
		json_decref(info);
		return front_fail(SBX_S_VM_BOOT, out, "out of memory answering adapter::info");
	}
	*out = info;
	return 0;
}

int front_route_call(struct front *f, const struct engine_invocation *inv, const char *op, json_t *data,
		     json_t **out)
{
	if (strcmp(op, "adapter::info") == 0)
		return route_info(f, out);
	if (strcmp(op, "list") == 0)
		return route_list(f, inv, data, out);
	if (strncmp(op, "worker::", 8) == 0)
		return route_worker(f, inv, op, data, out);
	if (json_is_object(data) && json_object_get(data, "sandbox_id") != NULL)
		return route_sandbox(f, inv, op, data, out);
	return front_to_any(f, inv, op, data, out);
}
