/* What the front's files share: the member table and the owner map, under
 * one lock. */
#ifndef SBX_FRONT_INTERNAL_H
#define SBX_FRONT_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "engine/engine.h"
#include "front/front.h"
#include "front/front_owners.h"

#define FRONT_MAX_MEMBERS 64
#define FRONT_NS_MAX 128
/* How often members are looked for and their capacity and lists read. */
#define FRONT_TICK_MS 1000
/* A gone member's sandboxes answer S300 this long, then S002. */
#define FRONT_GRACE_MS 5000
/* A member gone this long loses its slot (and the ids it was placed, which
 * answer S002 meanwhile): a namespace that comes and goes cannot fill the
 * table.  Pinned members keep theirs. */
#define FRONT_SLOT_FREE_MS (300 * 1000)
/* The router waits 2 s for adapter::info: so do we for a member's. */
#define FRONT_INFO_TIMEOUT_MS 2000
/* A forwarded call ends when the member answers or leaves the engine (the
 * engine stops its invocations then); this only bounds a member that hangs. */
#define FRONT_CALL_TIMEOUT_MS (24 * 3600 * 1000)

struct front_member {
	/* Set while the slot is free ("") or in refresh_lock and the lock
	 * (front_members.c); others copy it under the lock. */
	char ns[FRONT_NS_MAX + 1];
	bool up;
	bool forgotten;        /* its sandboxes were dropped after the grace */
	int64_t down_since_ms; /* when it was last seen going (found, if it never answered); 0 while up */
	json_t *info;          /* its last adapter::info answer, or NULL */
	/* Placed since that answer: concurrent creates see each other. */
	int64_t reserved_mib, reserved_live;
};

struct front {
	struct engine *e;
	char own_ns[FRONT_NS_MAX + 1];
	char **pinned; /* III_SANDBOX_MEMBERS, or NULL: discovered */
	size_t npinned;

	pthread_mutex_t lock; /* the members and the owners */
	struct front_member members[FRONT_MAX_MEMBERS];
	size_t nmembers;
	struct front_owners owners;  /* sandbox ids (never names) */
	struct front_owners workers; /* worker names: where worker::prepare placed them */

	pthread_mutex_t refresh_lock; /* one refresh at a time */
	_Atomic int64_t refreshed_ms; /* when the last refresh that reached the engine began */
	int wake_fd;                  /* eventfd: refresh now */
	atomic_bool stop;
	bool running;
	pthread_t thread;
};

/* front_members.c: one look at the engine and at every member; 0 when the
 * engine answered the discovery. */
int front_refresh(struct front *f);
/* front_refresh() for a call that found nothing (an unknown id, no member
 * up), one begun after the call asked: a member that joined a moment ago
 * is found.  Such refreshes begin at least FRONT_CALL_REFRESH_MS apart (the
 * call waits, and calls that waited together share one): a caller sending
 * unknown ids must not make the front read every member per call. */
#define FRONT_CALL_REFRESH_MS 250
int front_refresh_for_call(struct front *f);
/* A forwarded call found the member gone: it answers S300 from now on and
 * the next refresh comes at once.  Takes the lock. */
void front_member_lost(struct front *f, size_t member);
/* The indexes of the members up now, in namespace discovery order. */
size_t front_up_members(struct front *f, size_t idx[FRONT_MAX_MEMBERS]);
/* The first of them, or -1. */
long front_first_up(struct front *f);

/* front_forward.c */
enum front_fwd {
	FRONT_FWD_OK,          /* *out: the member's result */
	FRONT_FWD_ERROR,       /* *out: the member's error body; scode parsed when it has one */
	FRONT_FWD_UNREACHABLE, /* *out: an S300 body naming the member */
};
enum front_fwd front_forward(struct front *f, const struct engine_invocation *inv, size_t member, const char *op,
			     json_t *data, int timeout_ms, json_t **out, char scode[8]);
/* The contract envelope inside a member's error body (a new reference),
 * or NULL when the body is the engine's or malformed. */
json_t *front_envelope(json_t *body);
/* An error body of the front's own. */
int front_fail(const char *scode, json_t **out, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* front_create.c: create, run and worker::prepare, placed by capacity. */
int front_place_call(struct front *f, const struct engine_invocation *inv, const char *op, json_t *data,
		     json_t **out);

/* front_route.c: the calls that name their target. */
int front_route_call(struct front *f, const struct engine_invocation *inv, const char *op, json_t *data,
		     json_t **out);
/* The member data's `worker` was prepared on: 1 and *member, 0 unknown
 * (asked of every member first), -1 with *out (e.g. the auth check's S505). */
int front_worker_owner(struct front *f, const struct engine_invocation *inv, json_t *data, size_t *member,
		       json_t **out);
/* Forwards to the first member up, or answers S300 when none is. */
int front_to_any(struct front *f, const struct engine_invocation *inv, const char *op, json_t *data, json_t **out);

#endif
