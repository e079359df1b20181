/* Which member owns a sandbox: its id (and its name, which calls may use
 * too) to the member's index.  Not locked: the front holds its lock. */
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
	int32_t next; /* the next index in its bucket, or -1 */
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
bool front_owners_get(const struct front_owners *o, const char *key, size_t *member);
void front_owners_remove(struct front_owners *o, const char *key);
void front_owners_drop_member(struct front_owners *o, size_t member);
/* Member's keys become the ids and names of `sandboxes`, a list's rows.
 * Returns how many rows could not be kept. */
size_t front_owners_replace(struct front_owners *o, size_t member, json_t *sandboxes);
void front_owners_free(struct front_owners *o);

#endif
