/* The placement policy of issue 28: memory budget left, then live count;
 * a member that has the image or a pool VM only breaks ties, so that load
 * spreads while every member's store fills with the same images. */
#include "front/front_place.h"

static bool has_room(const struct front_slot *s, int64_t need_mib)
{
	return s->known && s->free_mib >= need_mib && s->live < s->max_live;
}

/* <0 when a goes first. */
static int compare(const struct front_slot *a, const struct front_slot *b, int64_t need_mib)
{
	bool ra = has_room(a, need_mib), rb = has_room(b, need_mib);
	if (ra != rb)
		return ra ? -1 : 1;
	if (a->known != b->known)
		return a->known ? -1 : 1;
	if (a->free_mib != b->free_mib)
		return a->free_mib > b->free_mib ? -1 : 1;
	if (a->live != b->live)
		return a->live < b->live ? -1 : 1;
	if (a->ready != b->ready)
		return a->ready ? -1 : 1;
	return 0;
}

/* Insertion sort: stable, and a cluster has a handful of members. */
void front_place_order(struct front_slot *slots, size_t n, int64_t need_mib)
{
	for (size_t i = 1; i < n; i++) {
		struct front_slot s = slots[i];
		size_t j = i;
		while (j > 0 && compare(&s, &slots[j - 1], need_mib) < 0) {
			slots[j] = slots[j - 1];
			j--;
		}
		slots[j] = s;
	}
}
