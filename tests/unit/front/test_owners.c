/* The owner map: ids and names to members, replaced from a member's list,
 * dropped with a member, bounded in key length. */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "front/front_owners.h"

TEST(set_get_move_remove)
{
	struct front_owners o = { 0 };
	size_t m = 99;
	CHECK(!front_owners_get(&o, "a", &m));
	CHECK_INT(front_owners_set(&o, "a", 1), 0);
	CHECK(front_owners_get(&o, "a", &m));
	CHECK_INT(m, 1);
	CHECK_INT(front_owners_set(&o, "a", 2), 0);
	CHECK(front_owners_get(&o, "a", &m));
	CHECK_INT(m, 2);
	CHECK_INT(o.n, 1);
	front_owners_remove(&o, "a");
	CHECK(!front_owners_get(&o, "a", &m));
	front_owners_free(&o);
}

TEST(bad_keys_are_refused)
{
	struct front_owners o = { 0 };
	char long_key[FRONT_KEY_MAX + 2];
	memset(long_key, 'k', sizeof(long_key) - 1);
	long_key[sizeof(long_key) - 1] = '\0';
	CHECK_INT(front_owners_set(&o, long_key, 0), -1);
	CHECK_INT(front_owners_set(&o, "", 0), -1);
	CHECK_INT(o.n, 0);
	front_owners_free(&o);
}

TEST(replace_from_a_list_and_drop_a_member)
{
	struct front_owners o = { 0 };
	CHECK_INT(front_owners_set(&o, "old", 0), 0);
	CHECK_INT(front_owners_set(&o, "other", 1), 0);
	json_t *rows = json_loads("[{\"sandbox_id\":\"id1\",\"name\":\"web\"},{\"sandbox_id\":\"id2\",\"name\":null},"
				  "{\"name\":\"no-id\"},{\"sandbox_id\":7}]",
				  0, NULL);
	CHECK(rows != NULL);
	/* Two rows without a usable id are not kept. */
	CHECK_INT(front_owners_replace(&o, 0, rows), 2);
	size_t m;
	CHECK(!front_owners_get(&o, "old", &m));
	CHECK(front_owners_get(&o, "id1", &m) && m == 0);
	CHECK(front_owners_get(&o, "web", &m) && m == 0);
	CHECK(front_owners_get(&o, "id2", &m) && m == 0);
	CHECK(front_owners_get(&o, "other", &m) && m == 1);
	front_owners_drop_member(&o, 0);
	CHECK_INT(o.n, 1);
	CHECK(front_owners_get(&o, "other", &m) && m == 1);
	json_decref(rows);
	front_owners_free(&o);
}

/* Past several growths of the index: every key found, moves and removals
 * (the swapped-in last entry included) keep every chain whole. */
TEST(many_keys_through_growth_and_removal)
{
	struct front_owners o = { 0 };
	char key[32];
	size_t m;
	for (size_t i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "sandbox-%zu", i);
		CHECK_INT(front_owners_set(&o, key, i % 7), 0);
	}
	CHECK_INT(o.n, 5000);
	for (size_t i = 0; i < 5000; i += 2) {
		snprintf(key, sizeof(key), "sandbox-%zu", i);
		front_owners_remove(&o, key);
	}
	front_owners_drop_member(&o, 3);
	size_t kept = 0;
	for (size_t i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "sandbox-%zu", i);
		bool want = i % 2 == 1 && i % 7 != 3;
		bool got = front_owners_get(&o, key, &m);
		CHECK(got == want);
		if (got) {
			CHECK_INT(m, i % 7);
			kept++;
		}
	}
	CHECK_INT(o.n, kept);
	front_owners_free(&o);
}

TEST(the_table_is_bounded)
{
	struct front_owners o = { 0 };
	char key[32];
	for (size_t i = 0; i < FRONT_OWNERS_MAX; i++) {
		snprintf(key, sizeof(key), "k%zu", i);
		if (front_owners_set(&o, key, 0) < 0)
			break;
	}
	CHECK_INT(o.n, FRONT_OWNERS_MAX);
	CHECK_INT(front_owners_set(&o, "one-more", 1), -1);
	/* An existing key still moves. */
	CHECK_INT(front_owners_set(&o, "k1", 2), 0);
	size_t m;
	CHECK(front_owners_get(&o, "k1", &m) && m == 2);
	front_owners_free(&o);
}
