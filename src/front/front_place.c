/* The placement policy of issue 28: memory budget left, then live count;
 * a member that has the image or a pool VM only breaks ties, so that load
 * spreads while every member's store fills with the same images. */
#include "front/front_place.h"

#include <string.h>

int64_t front_figure(json_t *v)
{
	if (!json_is_integer(v))
		return -1;
	json_int_t n = json_integer_value(v);
	return n >= 0 && n <= FRONT_FIGURE_MAX ? (int64_t)n : -1;
}

static int64_t figure_at(json_t *cap, const char *a, const char *b)
{
	return front_figure(json_object_get(json_object_get(cap, a), b));
}

static bool cached(json_t *cap, const char *image)
{
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(cap, "images_cached"), i, v) {
		if (image != NULL && json_is_string(v) && strcmp(json_string_value(v), image) == 0)
			return true;
	}
	return false;
}

void front_slot_from(struct front_slot *s, size_t member, json_t *cap, const char *image, int64_t reserved_mib,
		     int64_t reserved_live)
{
	int64_t committed = figure_at(cap, "memory_mib", "committed"), budget = figure_at(cap, "memory_mib", "budget");
	int64_t live = figure_at(cap, "sandboxes", "live"), max = figure_at(cap, "sandboxes", "max");
	*s = (struct front_slot){
		.member = member,
		.known = committed >= 0 && budget >= 0 && live >= 0 && max >= 0,
		.ready = cached(cap, image) || front_figure(json_object_get(cap, "pool_ready")) > 0,
	};
	if (s->known) {
		s->free_mib = budget - committed - reserved_mib;
		s->live = live + reserved_live;
		s->max_live = max;
	}
}

int64_t front_need_mib(json_t *data)
{
	json_t *mem = json_object_get(data, "memory_mb");
	if (!json_is_integer(mem) || json_integer_value(mem) <= 0)
		return -1;
	return json_integer_value(mem) < FRONT_FIGURE_MAX ? (int64_t)json_integer_value(mem) : FRONT_FIGURE_MAX;
}

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
