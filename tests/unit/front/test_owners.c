/* The owner map: ids and names to members, replaced from a member's list,
 * dropped with a member, bounded in key length. */
#include <stdio.h>
#include <stdlib.h>
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

#define ID1 "11111111-1111-4111-8111-111111111111"
#define ID2 "22222222-2222-4222-8222-222222222222"
#define ID3 "33333333-3333-4333-8333-333333333333"
#define ID4 "44444444-4444-4444-8444-444444444444"

static json_t *rows_of(const char *text)
{
	json_t *rows = json_loads(text, 0, NULL);
	if (rows == NULL)
		abort();
	return rows;
}

TEST(replace_from_a_list_and_drop_a_member)
{
	struct front_owners o = { 0 };
	struct front_replace_stats st;
	CHECK_INT(front_owners_set(&o, "old", 0), 0);
	CHECK_INT(front_owners_set(&o, "other", 1), 0);
	json_t *rows = rows_of("[{\"sandbox_id\":\"" ID1 "\",\"name\":\"web\"},{\"sandbox_id\":\"" ID2 "\",\"name\":null},"
			       "{\"name\":\"no-id\"},{\"sandbox_id\":7},{\"sandbox_id\":\"web\"},"
			       "{\"sandbox_id\":\"11111111-1111-4111-8111-11111111111A\"}]");
	/* Rows without a canonical id are not kept: a missing one, a number, a
	 * name, an id in upper case. */
	front_owners_replace(&o, 0, rows, 100, &st);
	CHECK_INT(st.lost, 4);
	CHECK_INT(st.refused, 0);
	size_t m;
	CHECK(!front_owners_get(&o, "old", &m));
	CHECK(front_owners_get(&o, ID1, &m) && m == 0);
	CHECK(front_owners_get(&o, ID2, &m) && m == 0);
	/* Names are labels, never keys. */
	CHECK(!front_owners_get(&o, "web", &m));
	CHECK(front_owners_get(&o, "other", &m) && m == 1);
	front_owners_drop_member(&o, 0);
	CHECK_INT(o.n, 1);
	CHECK(front_owners_get(&o, "other", &m) && m == 1);
	json_decref(rows);
	front_owners_free(&o);
}

/* A hostile member lists another member's ids: one this front placed is
 * never moved; one only learnt from lists becomes contested (routed to
 * nobody) until one of the two stops listing it. */
TEST(a_member_listing_another_members_ids_takes_none)
{
	struct front_owners o = { 0 };
	struct front_replace_stats st;
	size_t m;
	long rival;
	CHECK_INT(front_owners_claim(&o, ID1, 0, 50), 0);
	json_t *honest = rows_of("[{\"sandbox_id\":\"" ID1 "\"},{\"sandbox_id\":\"" ID2 "\"}]");
	front_owners_replace(&o, 0, honest, 100, &st);
	CHECK_INT(st.refused, 0);
	json_t *hostile = rows_of("[{\"sandbox_id\":\"" ID1 "\"},{\"sandbox_id\":\"" ID2 "\"},{\"sandbox_id\":\"" ID3 "\"}]");
	front_owners_replace(&o, 1, hostile, 100, &st);
	CHECK_INT(st.refused, 2);
	/* Placed here on member 0: still member 0's, not contested. */
	CHECK(front_owners_find(&o, ID1, &m, &rival) && m == 0 && rival == -1);
	/* Learnt: routed to neither. */
	CHECK(!front_owners_find(&o, ID2, &m, &rival));
	CHECK_INT(rival, 1);
	CHECK_INT(m, 0);
	CHECK(front_owners_get(&o, ID3, &m) && m == 1);
	/* A create answered with another member's id is refused too. */
	CHECK_INT(front_owners_claim(&o, ID1, 1, 200), 1);
	CHECK(front_owners_get(&o, ID1, &m) && m == 0);
	/* The hostile member stops listing ID2: the contest ends. */
	json_t *less = rows_of("[{\"sandbox_id\":\"" ID3 "\"}]");
	front_owners_replace(&o, 1, less, 300, &st);
	CHECK(front_owners_get(&o, ID2, &m) && m == 0);
	/* Its member gone past the grace: learnt ids go, placed ones stay its. */
	front_owners_drop_learnt(&o, 0);
	CHECK(!front_owners_find(&o, ID2, &m, &rival) && rival == -1);
	CHECK(front_owners_get(&o, ID1, &m) && m == 0);
	front_owners_replace(&o, 1, hostile, 400, &st);
	CHECK(front_owners_get(&o, ID1, &m) && m == 0);
	json_decref(honest);
	json_decref(hostile);
	json_decref(less);
	front_owners_free(&o);
}

/* A placed id its member's list does not show yet (the list was asked
 * before the create ended) stays; one the list had the time to show goes. */
TEST(a_placed_id_goes_only_when_a_later_list_lacks_it)
{
	struct front_owners o = { 0 };
	struct front_replace_stats st;
	size_t m;
	json_t *empty = rows_of("[]");
	CHECK_INT(front_owners_claim(&o, ID4, 2, 1000), 0);
	front_owners_replace(&o, 2, empty, 999, &st);
	CHECK(front_owners_get(&o, ID4, &m) && m == 2);
	front_owners_replace(&o, 2, empty, 1000, &st);
	CHECK(!front_owners_get(&o, ID4, &m));
	json_decref(empty);
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
