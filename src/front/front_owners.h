/* Which member owns a sandbox id (or, in a map of its own, a worker name):
 * the key to the member's index.  Names of sandboxes are labels, never
 * keys.  An id the front placed (front_owners_claim) is that member's and
 * no member's list moves it; an id only learnt from lists is the first
 * lister's, and contested (routed to nobody) while another lists it too.
 * Not locked: the front holds its lock. */
#ifndef SBX_FRONT_OWNERS_H
#define SBX_FRONT_OWNERS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Members' lists are bounded (max_concurrent_sandboxes each); this bounds
 * what a misbehaving member can make the front hold. */
#define FRONT_OWNERS_MAX 65536
#define FRONT_KEY_MAX 256

struct front_owner {
	char *key;
	size_t member;
	uint32_t hash;
	int32_t next;     /* the next index in its bucket, or -1 */
	int64_t placed_ms; /* when this front placed it there; 0: learnt from a list */
	long rival;       /* another member listing it too, or -1 */
	bool seen;        /* scratch of front_owners_replace */
};

/* The keys in a dense array (iterated when a member goes) and a hash index
 * over it, so that replacing a member's list each second costs its length,
 * not its length times the map's. */
struct front_owners {
	struct front_owner *v;
	size_t n, cap;
	int32_t *heads; /* cap buckets (a power of two): the first index, or -1 */
};

/* Adds or moves key; -1 when it is too long, the table is full or memory
 * ran out (the key is then looked up again when used). */
int front_owners_set(struct front_owners *o, const char *key, size_t member);
/* An id a member answered this front's create with, at now_ms: 0, -1 as
 * front_owners_set, 1 when another member holds it already (refused). */
int front_owners_claim(struct front_owners *o, const char *id, size_t member, int64_t now_ms);
/* key's member; false when unknown or contested (*rival then >= 0). */
bool front_owners_get(const struct front_owners *o, const char *key, size_t *member);
bool front_owners_find(const struct front_owners *o, const char *key, size_t *member, long *rival);
void front_owners_remove(struct front_owners *o, const char *key);
void front_owners_drop_member(struct front_owners *o, size_t member);
/* Drops the member's ids learnt from lists; those it was placed keep
 * naming it (a gone member's ids are never another's). */
void front_owners_drop_learnt(struct front_owners *o, size_t member);

struct front_replace_stats {
	size_t lost;    /* rows without a canonical id, or not kept (bounds) */
	size_t refused; /* ids another member holds: never moved */
};
/* Member's ids become those of `sandboxes`, its list's rows, read by a
 * refresh begun at began_ms: its ids not listed go, but for those placed
 * after began_ms (the list was asked before they existed). */
void front_owners_replace(struct front_owners *o, size_t member, json_t *sandboxes, int64_t began_ms,
			  struct front_replace_stats *st);
void front_owners_free(struct front_owners *o);

#endif
