/* Where a create goes: the members ordered by free capacity.  Pure, so that
 * the unit tests hold the policy without an engine. */
#ifndef SBX_FRONT_PLACE_H
#define SBX_FRONT_PLACE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A member's capacity figures and a request's memory come from the engine:
 * each is taken only in [0, FRONT_FIGURE_MAX] MiB or sandboxes, so that
 * the sums and differences of placement cannot overflow. */
#define FRONT_FIGURE_MAX ((int64_t)1 << 40)

struct front_slot {
	size_t member;    /* the caller's index */
	bool known;       /* the member reported its capacity */
	int64_t free_mib; /* memory budget left (negative: over) */
	int64_t live, max_live;
	bool ready;       /* the image is cached there, or a pool VM waits */
};

/* v as a figure, or -1 when it is not an integer in [0, FRONT_FIGURE_MAX]. */
int64_t front_figure(json_t *v);
/* The slot of `member` from the `capacity` object of its adapter::info
 * (any shape), less what was placed on it since it was read (each in
 * [0, FRONT_FIGURE_MAX]); image: the request's, for readiness. */
void front_slot_from(struct front_slot *s, size_t member, json_t *cap, const char *image, int64_t reserved_mib,
		     int64_t reserved_live);
/* The memory a request asks for (`memory_mb`, at most FRONT_FIGURE_MAX), or
 * -1 when it names none. */
int64_t front_need_mib(json_t *data);

/* Sorts slots best first: members with room for need_mib and a sandbox
 * slot, then by memory budget left, then by fewer live sandboxes, then
 * readiness; members whose capacity is unknown last.  Ties keep their
 * order (the caller lists members by namespace). */
void front_place_order(struct front_slot *slots, size_t n, int64_t need_mib);

#endif
