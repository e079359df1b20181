/* Finding the members and keeping their capacity and lists: one refresh a
 * second.  The calls go out without the lock; what they bring is applied
 * under it. */
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "adapter/adapter.h"
#include "common/cleanup_json.h"
#include "common/clock.h"
#include "common/cleanup.h"
#include "common/log.h"
#include "common/log_limit.h"
#include "front/front_internal.h"
#include "front/front_metrics.h"

#define INFO_ID SBX_WORKER_NAME "::adapter::info"

static bool valid_ns(const char *ns)
{
	return ns != NULL && ns[0] != '\0' && strnlen(ns, FRONT_NS_MAX + 1) <= FRONT_NS_MAX;
}

/* The slot of ns, added when new (in a free slot first); -1 when the
 * table is full. */
static long slot_of(struct front *f, const char *ns)
{
	long free_slot = -1;
	for (size_t i = 0; i < f->nmembers; i++) {
		if (strcmp(f->members[i].ns, ns) == 0)
			return (long)i;
		if (f->members[i].ns[0] == '\0' && free_slot < 0)
			free_slot = (long)i;
	}
	if (free_slot < 0 && f->nmembers == FRONT_MAX_MEMBERS)
		return -1;
	size_t s = free_slot >= 0 ? (size_t)free_slot : f->nmembers++;
	struct front_member *m = &f->members[s];
	/* Down until its first answer, and gone since found: a namespace that
	 * never answers is forgotten, then freed, as one that left. */
	*m = (struct front_member){ .down_since_ms = sbx_now_ms() };
	memcpy(m->ns, ns, strlen(ns) + 1);
	return (long)s;
}

/* Namespaces whose adapter::info the engine lists, into `seen` (indexes of
 * slots).  -1 when the engine did not answer. */
static int discover(struct front *f, bool seen[FRONT_MAX_MEMBERS])
{
	if (f->pinned != NULL) {
		pthread_mutex_lock(&f->lock);
		for (size_t i = 0; i < f->npinned; i++) {
			long s = slot_of(f, f->pinned[i]);
			if (s >= 0)
				seen[s] = true;
		}
		pthread_mutex_unlock(&f->lock);
		return 0;
	}
	cleanup_json json_t *req = json_pack("{s:s}", "prefix", INFO_ID);
	cleanup_json json_t *res = NULL;
	cleanup_json json_t *ebody = NULL;
	sbx_error_t err = NULL;
	if (req == NULL)
		return -1;
	int rc = engine_call(f->e, NULL, "engine::functions::list", req, FRONT_INFO_TIMEOUT_MS, &res, &ebody, &err);
	if (rc != 0) {
		sbx_debug("front: engine::functions::list failed: %s", rc < 0 ? sbx_error_msg(err) : "an error answer");
		sbx_error_free(&err);
		return -1;
	}
	json_t *rows = json_object_get(res, "functions");
	size_t i;
	json_t *row;
	pthread_mutex_lock(&f->lock);
	json_array_foreach(rows, i, row) {
		const char *id = json_string_value(json_object_get(row, "function_id"));
		const char *ns = json_string_value(json_object_get(row, "namespace"));
		if (id == NULL || strcmp(id, INFO_ID) != 0 || !valid_ns(ns) || strcmp(ns, f->own_ns) == 0)
			continue;
		long s = slot_of(f, ns);
		if (s >= 0)
			seen[s] = true;
		else
			sbx_warn_limited("front: more than %d members; namespace %s ignored", FRONT_MAX_MEMBERS, ns);
	}
	pthread_mutex_unlock(&f->lock);
	return 0;
}

/* Lock held. */
static void mark_down(struct front *f, size_t i, int64_t now)
{
	struct front_member *m = &f->members[i];
	if (m->up) {
		m->up = false;
		m->down_since_ms = now;
		sbx_warn("front: member %s is gone: its sandboxes answer S300 for %d s, then S002", m->ns,
			 FRONT_GRACE_MS / 1000);
	}
	if (!m->forgotten && m->down_since_ms != 0 && now - m->down_since_ms >= FRONT_GRACE_MS) {
		/* The ids this front placed there stay its (S002 meanwhile). */
		front_owners_drop_learnt(&f->owners, i);
		front_owners_drop_member(&f->workers, i);
		m->forgotten = true;
	}
}

/* Lock held: the slots of members gone over FRONT_SLOT_FREE_MS. */
static void free_gone(struct front *f, int64_t now)
{
	for (size_t i = 0; f->pinned == NULL && i < f->nmembers; i++) {
		struct front_member *m = &f->members[i];
		if (m->ns[0] == '\0' || m->up || !m->forgotten || now - m->down_since_ms < FRONT_SLOT_FREE_MS)
			continue;
		sbx_info("front: member %s gone for %d s: its slot is freed", m->ns, FRONT_SLOT_FREE_MS / 1000);
		front_owners_drop_member(&f->owners, i);
		front_owners_drop_member(&f->workers, i);
		json_decref(m->info);
		*m = (struct front_member){ 0 };
	}
}

/* Lock held; takes info.  began: when the refresh that read list began. */
static void mark_up(struct front *f, size_t i, json_t *info, json_t *list, int64_t began)
{
	struct front_member *m = &f->members[i];
	json_t *rows = json_object_get(list, "sandboxes");
	if (!m->up)
		sbx_info("front: member %s is up (%zu sandboxes)", m->ns, json_array_size(rows));
	m->up = true;
	m->forgotten = false;
	m->down_since_ms = 0;
	json_decref(m->info);
	m->info = info;
	m->reserved_mib = m->reserved_live = 0;
	struct front_replace_stats st;
	front_owners_replace(&f->owners, i, rows, began, &st);
	if (st.lost > 0)
		sbx_warn_limited("front: %zu sandboxes of member %s not mapped (no canonical id, or past the bounds)",
				 st.lost, m->ns);
	if (st.refused > 0)
		sbx_warn_limited("front: member %s lists %zu sandbox ids another member holds: not moved (ids this "
				 "front placed stay where it placed them; others are routed to nobody while two "
				 "members list them)",
				 m->ns, st.refused);
}

static int call_member(struct front *f, const char *ns, const char *fn, json_t **res)
{
	cleanup_json json_t *req = json_object();
	cleanup_json json_t *ebody = NULL;
	sbx_error_t err = NULL;
	int rc = req == NULL ? -1 : engine_call_in(f->e, NULL, ns, fn, req, FRONT_INFO_TIMEOUT_MS, res, &ebody, &err);
	sbx_error_free(&err);
	if (rc == 0 && json_is_object(*res))
		return 0;
	json_decref(*res);
	*res = NULL;
	return -1;
}

/* refresh_lock held. */
static int refresh_locked(struct front *f)
{
	int64_t began = sbx_now_ms();
	bool seen[FRONT_MAX_MEMBERS] = { false };
	int found = discover(f, seen);
	front_metrics_refresh(found < 0);
	if (found < 0)
		return -1;
	pthread_mutex_lock(&f->lock);
	size_t n = f->nmembers;
	pthread_mutex_unlock(&f->lock);
	for (size_t i = 0; i < n; i++) {
		json_t *info = NULL, *list = NULL;
		/* Slots change only under refresh_lock, which is held. */
		const char *ns = f->members[i].ns;
		if (ns[0] == '\0')
			continue;
		bool ok = seen[i] && call_member(f, ns, INFO_ID, &info) == 0 &&
			  call_member(f, ns, SBX_WORKER_NAME "::list", &list) == 0;
		pthread_mutex_lock(&f->lock);
		if (ok)
			mark_up(f, i, sbx_steal_ptr(info), list, began);
		else
			mark_down(f, i, sbx_now_ms());
		pthread_mutex_unlock(&f->lock);
		json_decref(info);
		json_decref(list);
	}
	pthread_mutex_lock(&f->lock);
	free_gone(f, sbx_now_ms());
	pthread_mutex_unlock(&f->lock);
	atomic_store(&f->refreshed_ms, began);
	return 0;
}

int front_refresh(struct front *f)
{
	pthread_mutex_lock(&f->refresh_lock);
	int rc = refresh_locked(f);
	pthread_mutex_unlock(&f->refresh_lock);
	return rc;
}

int front_refresh_for_call(struct front *f)
{
	int64_t asked = sbx_now_ms();
	int64_t wait = atomic_load(&f->refreshed_ms) + FRONT_CALL_REFRESH_MS - asked;
	if (wait > 0)
		usleep((useconds_t)wait * 1000);
	pthread_mutex_lock(&f->refresh_lock);
	/* A refresh begun after the call asked has seen what it needs; the
	 * calls that waited together share one. */
	int rc = atomic_load(&f->refreshed_ms) > asked ? 0 : refresh_locked(f);
	pthread_mutex_unlock(&f->refresh_lock);
	return rc;
}

void front_member_lost(struct front *f, size_t member)
{
	pthread_mutex_lock(&f->lock);
	mark_down(f, member, sbx_now_ms());
	pthread_mutex_unlock(&f->lock);
	uint64_t one = 1;
	if (write(f->wake_fd, &one, sizeof(one)) < 0)
		sbx_debug("front: refresh already asked for");
}

size_t front_up_members(struct front *f, size_t idx[FRONT_MAX_MEMBERS])
{
	size_t n = 0;
	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; i < f->nmembers; i++)
		if (f->members[i].up)
			idx[n++] = i;
	pthread_mutex_unlock(&f->lock);
	return n;
}

long front_first_up(struct front *f)
{
	size_t idx[FRONT_MAX_MEMBERS];
	return front_up_members(f, idx) > 0 ? (long)idx[0] : -1;
}
