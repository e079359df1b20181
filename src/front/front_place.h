/* Where a create goes: the members ordered by free capacity.  Pure, so that
 * the unit tests hold the policy without an engine. */
#ifndef SBX_FRONT_PLACE_H
#define SBX_FRONT_PLACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct front_slot {
	size_t member;    /* the caller's index */
	bool known;       /* the member reported its capacity */
	int64_t free_mib; /* memory budget left (negative: over) */
	int64_t live, max_live;
	bool ready;       /* the image is cached there, or a pool VM waits */
};

/* Sorts slots best first: members with room for need_mib and a sandbox
 * slot, then by memory budget left, then by fewer live sandboxes, then
 * readiness; members whose capacity is unknown last.  Ties keep their
 * order (the caller lists members by namespace). */
void front_place_order(struct front_slot *slots, size_t n, int64_t need_mib);

#endif
