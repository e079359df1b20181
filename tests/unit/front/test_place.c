/* The placement policy: room first, then memory budget left, then fewer
 * live sandboxes, readiness only breaking ties; unknown capacity last. */
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
