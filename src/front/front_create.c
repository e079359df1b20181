/* create, run and worker::prepare: placed on the member with the most
 * room (front_place.c), the next tried when one answers S400. */
#include <stdio.h>
#include <string.h>

#include "common/cleanup_json.h"
#include "common/clock.h"
#include "common/log_limit.h"
#include "common/scodes.h"
#include "common/uuid.h"
#include "front/front_internal.h"
#include "front/front_metrics.h"
#include "front/front_place.h"

/* The members up, with their capacity as last read less what was placed
 * since; *need_mib: the request's memory, else the first member's default. */
static size_t slots_of(struct front *f, json_t *data, struct front_slot slots[FRONT_MAX_MEMBERS], int64_t *need_mib)
{
	const char *image = json_string_value(json_object_get(data, "image"));
	*need_mib = front_need_mib(data);
	size_t n = 0;
	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; i < f->nmembers; i++) {
		const struct front_member *m = &f->members[i];
		if (!m->up)
			continue;
		json_t *cap = json_object_get(m->info, "capacity");
		int64_t def = front_figure(json_object_get(json_object_get(cap, "memory_mib"), "sandbox_default"));
		if (*need_mib < 0 && def > 0)
			*need_mib = def;
		front_slot_from(&slots[n++], i, cap, image, m->reserved_mib, m->reserved_live);
	}
	pthread_mutex_unlock(&f->lock);
	if (*need_mib < 0)
		*need_mib = 0;
	return n;
}

static int64_t clamp_figure(int64_t v)
{
	return v < 0 ? 0 : v > FRONT_FIGURE_MAX ? FRONT_FIGURE_MAX : v;
}

static void reserve(struct front *f, size_t member, int64_t mib, int64_t live)
{
	pthread_mutex_lock(&f->lock);
	struct front_member *m = &f->members[member];
	/* A refresh in between reset the reservation: never below zero.  Both
	 * stay figures (front_place.h), as mib and live are. */
	m->reserved_mib = clamp_figure(m->reserved_mib + mib);
	m->reserved_live = clamp_figure(m->reserved_live + live);
	pthread_mutex_unlock(&f->lock);
}

/* What the placed call left behind for later calls to find: the worker's
 * member, or the new id's (a sandbox's name is a label, never a key). */
static void record(struct front *f, const char *op, json_t *data, json_t *res, size_t member)
{
	const char *worker = json_string_value(json_object_get(data, "worker"));
	const char *id = json_string_value(json_object_get(res, "sandbox_id"));
	bool prepare = strcmp(op, "worker::prepare") == 0;
	char canon[SBX_UUID_STRLEN + 1];
	pthread_mutex_lock(&f->lock);
	int rc = 0;
	if (prepare && worker != NULL)
		rc = front_owners_set(&f->workers, worker, member);
	if (!prepare && id != NULL)
		rc = sbx_uuid_parse(id, canon) && strcmp(canon, id) == 0 ? front_owners_claim(&f->owners, id, member,
											      sbx_now_ms())
									  : -1;
	char ns[FRONT_NS_MAX + 1];
	memcpy(ns, f->members[member].ns, sizeof(ns));
	pthread_mutex_unlock(&f->lock);
	if (rc < 0)
		sbx_warn_limited("front: %s's result not mapped (looked up again when used)", op);
	if (rc > 0)
		sbx_warn_limited("front: member %s answered %s with sandbox id %.64s, which another member holds: "
				 "not moved",
				 ns, op, id);
}

/* Appends "ns: message" of a refusal to the summary of the S400. */
static void note(char *sum, size_t size, const char *ns, json_t *body)
{
	cleanup_json json_t *env = front_envelope(body);
	const char *msg = json_string_value(json_object_get(env, "message"));
	size_t used = strlen(sum);
	if (used < size)
		snprintf(sum + used, size - used, "%s%s: %.200s", used > 0 ? "; " : "", ns,
			 msg != NULL ? msg : "no answer");
}

/* worker::prepare of a worker placed already goes where it was: its data
 * disk is there.  1 when it was forwarded, 0 when it is to be placed. */
static int known_target(struct front *f, const struct engine_invocation *inv, const char *op, json_t *data,
			json_t **out, int *rc)
{
	size_t m;
	int known = strcmp(op, "worker::prepare") == 0 ? front_worker_owner(f, inv, data, &m, out) : 0;
	if (known < 0)
		return *rc = -1, 1;
	if (known == 0)
		return 0;
	char scode[8];
	*rc = front_forward(f, inv, m, op, data, FRONT_CALL_TIMEOUT_MS, out, scode) == FRONT_FWD_OK ? 0 : -1;
	if (*rc == 0)
		record(f, op, data, *out, m);
	return 1;
}

int front_place_call(struct front *f, const struct engine_invocation *inv, const char *op, json_t *data,
		     json_t **out)
{
	int rc;
	if (known_target(f, inv, op, data, out, &rc))
		return rc;
	struct front_slot slots[FRONT_MAX_MEMBERS];
	int64_t need;
	size_t n = slots_of(f, data, slots, &need);
	if (n == 0 && front_refresh_for_call(f) == 0)
		n = slots_of(f, data, slots, &need);
	if (n == 0)
		return front_to_any(f, inv, op, data, out);
	front_place_order(slots, n, need);
	char refused[2048] = "";
	bool full = false;
	for (size_t k = 0; k < n; k++) {
		size_t m = slots[k].member;
		char scode[8];
		json_t *res = NULL;
		reserve(f, m, need, 1);
		enum front_fwd r = front_forward(f, inv, m, op, data, FRONT_CALL_TIMEOUT_MS, &res, scode);
		if (r == FRONT_FWD_OK) {
			record(f, op, data, res, m);
			*out = res;
			return 0;
		}
		reserve(f, m, -need, -1);
		/* Full or gone: the next member may have room.  Anything else
		 * (a bad request, an unknown image) every member would say. */
		if (r == FRONT_FWD_ERROR && strcmp(scode, SBX_S_LIMIT) != 0) {
			*out = res;
			return -1;
		}
		full |= r == FRONT_FWD_ERROR;
		note(refused, sizeof(refused), f->members[m].ns, res);
		json_decref(res);
	}
	if (full)
		front_metrics_full(op);
	return front_fail(full ? SBX_S_LIMIT : SBX_S_VM_BOOT, out, "%s (%zu tried): %s",
			  full ? "every member is full or gone" : "every member is gone", n, refused);
}
