/* The placement policy: room first, then memory budget left, then fewer
 * live sandboxes, readiness only breaking ties; unknown capacity last. */
#include <stdlib.h>

#include "harness.h"
#include "front/front_place.h"

static struct front_slot slot(size_t member, int64_t free_mib, int64_t live, int64_t max, bool ready)
{
	return (struct front_slot){ member, true, free_mib, live, max, ready };
}

TEST(most_memory_left_first)
{
	struct front_slot s[3] = { slot(0, 1024, 0, 32, false), slot(1, 3072, 5, 32, false), slot(2, 2048, 0, 32, false) };
	front_place_order(s, 3, 256);
	CHECK_INT(s[0].member, 1);
	CHECK_INT(s[1].member, 2);
	CHECK_INT(s[2].member, 0);
}

TEST(fewer_live_then_ready_break_ties)
{
	struct front_slot s[3] = { slot(0, 2048, 3, 32, true), slot(1, 2048, 1, 32, false), slot(2, 2048, 1, 32, true) };
	front_place_order(s, 3, 256);
	CHECK_INT(s[0].member, 2);
	CHECK_INT(s[1].member, 1);
	CHECK_INT(s[2].member, 0);
}

TEST(members_without_room_go_last)
{
	/* Most memory, but every sandbox slot taken; then too little memory. */
	struct front_slot s[3] = { slot(0, 8192, 4, 4, false), slot(1, 128, 0, 32, true), slot(2, 512, 0, 32, false) };
	front_place_order(s, 3, 256);
	CHECK_INT(s[0].member, 2);
	/* Both full ones stay candidates (their figures may be stale), by memory. */
	CHECK_INT(s[1].member, 0);
	CHECK_INT(s[2].member, 1);
}

TEST(unknown_capacity_last_and_stable)
{
	struct front_slot s[4] = { { .member = 0 }, slot(1, 64, 0, 32, false), { .member = 2 }, slot(3, 100, 0, 32, false) };
	front_place_order(s, 4, 256);
	CHECK_INT(s[0].member, 3);
	CHECK_INT(s[1].member, 1);
	CHECK_INT(s[2].member, 0);
	CHECK_INT(s[3].member, 2);
}

TEST(equal_members_keep_their_order)
{
	struct front_slot s[3] = { slot(0, 1000, 2, 32, false), slot(1, 1000, 2, 32, false), slot(2, 1000, 2, 32, false) };
	front_place_order(s, 3, 256);
	CHECK_INT(s[0].member, 0);
	CHECK_INT(s[1].member, 1);
	CHECK_INT(s[2].member, 2);
}

static json_t *cap(const char *text)
{
	json_t *v = json_loads(text, 0, NULL);
	if (v == NULL)
		abort();
	return v;
}

TEST(capacity_figures_from_a_member)
{
	json_t *c = cap("{\"sandboxes\": {\"live\": 3, \"max\": 32}, \"memory_mib\": {\"committed\": 1000, "
			"\"budget\": 4000}, \"images_cached\": [\"python\", 7], \"pool_ready\": 0}");
	struct front_slot s;
	front_slot_from(&s, 5, c, "python", 640, 1);
	CHECK_INT(s.member, 5);
	CHECK(s.known);
	CHECK_INT(s.free_mib, 4000 - 1000 - 640);
	CHECK_INT(s.live, 4);
	CHECK_INT(s.max_live, 32);
	CHECK(s.ready);
	front_slot_from(&s, 5, c, "node", 0, 0);
	CHECK(!s.ready);
	json_decref(c);
}

/* Figures out of range make the capacity unknown instead of overflowing
 * the sums (a member or the engine may send anything). */
TEST(absurd_figures_are_unknown)
{
	const char *bad[] = {
		"{\"sandboxes\": {\"live\": 0, \"max\": 32}, \"memory_mib\": {\"committed\": -9223372036854775807, "
		"\"budget\": 9223372036854775807}}",
		"{\"sandboxes\": {\"live\": 9223372036854775807, \"max\": 32}, \"memory_mib\": {\"committed\": 0, "
		"\"budget\": 4000}}",
		"{\"sandboxes\": {\"live\": 0, \"max\": 1.5}, \"memory_mib\": {\"committed\": 0, \"budget\": 4000}}",
		"{\"sandboxes\": [], \"memory_mib\": \"lots\"}",
		"[]",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *c = cap(bad[i]);
		struct front_slot s;
		front_slot_from(&s, 0, c, "python", FRONT_FIGURE_MAX, FRONT_FIGURE_MAX);
		CHECK(!s.known);
		json_decref(c);
	}
	json_t *c = cap("{\"sandboxes\": {\"live\": 1099511627776, \"max\": 1099511627776}, \"memory_mib\": "
			"{\"committed\": 0, \"budget\": 1099511627776}, \"pool_ready\": 1099511627777}");
	struct front_slot s;
	front_slot_from(&s, 0, c, NULL, FRONT_FIGURE_MAX, FRONT_FIGURE_MAX);
	CHECK(s.known);
	CHECK_INT(s.free_mib, 0);
	CHECK_INT(s.live, 2 * FRONT_FIGURE_MAX);
	CHECK(!s.ready);
	json_decref(c);
}

TEST(request_memory_is_bounded)
{
	json_t *d = cap("{\"memory_mb\": 9223372036854775807}");
	CHECK_INT(front_need_mib(d), FRONT_FIGURE_MAX);
	json_decref(d);
	d = cap("{\"memory_mb\": 512}");
	CHECK_INT(front_need_mib(d), 512);
	json_decref(d);
	d = cap("{\"memory_mb\": -1, \"image\": \"python\"}");
	CHECK_INT(front_need_mib(d), -1);
	json_decref(d);
	CHECK_INT(front_need_mib(NULL), -1);
}
