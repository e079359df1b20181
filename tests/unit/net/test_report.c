/* net_report: the denial reasons' names and the report a network helper
 * sends the daemon, read as a hostile helper may write it: exact length,
 * version, count and zero padding; counts capped and never going down;
 * the deltas are what a report adds to the last one accepted. */
#include "harness.h"
#include "net/net_report.h"

static void put64(uint8_t *p, uint64_t v)
{
	for (int b = 0; b < 8; b++)
		p[b] = (uint8_t)(v >> (8 * b));
}

/* net_report_accept's result. */
static int accept_msg(struct net_report *seen, const uint8_t *msg, size_t len, struct net_report *delta)
{
	sbx_error_t err = NULL;
	int rc = net_report_accept(seen, msg, len, delta, &err);
	/* an error exactly with a failure; -2 when not */
	int consistent = (rc < 0) == (err != NULL);
	sbx_error_free(&err);
	return consistent ? rc : -2;
}

TEST(every_reason_has_a_distinct_label_of_metric_characters)
{
	for (int i = 0; i < NET_DENY_N; i++) {
		const char *n = net_deny_reason_name(i);
		CHECK(n != NULL && n[0] != '\0' && strlen(n) < 32);
		CHECK(strspn(n, "abcdefghijklmnopqrstuvwxyz_0123456789") == strlen(n));
		for (int j = 0; j < i; j++)
			CHECK(strcmp(n, net_deny_reason_name(j)) != 0);
	}
	CHECK(net_deny_reason_name(NET_DENY_N) == NULL);
	CHECK(net_deny_reason_name((enum net_deny_reason)-1) == NULL);
	CHECK_STR(net_deny_reason_name(NET_DENY_DENIED_RANGE), "denied_range");
	CHECK_STR(net_deny_reason_name(NET_DENY_DNS_NAME), "dns_name");
}

TEST(a_report_is_versioned_little_endian_and_carries_each_count)
{
	struct net_report r = { { 0 } };
	r.denied[NET_DENY_HOST_PORT] = 1;
	r.denied[NET_DENY_SPOOFED] = 0x0102030405ull;
	uint8_t msg[NET_REPORT_LEN];
	net_report_encode(&r, msg);
	CHECK_INT(msg[0], NET_REPORT_VERSION);
	CHECK_INT(msg[1], NET_DENY_N);
	for (int i = 2; i < NET_REPORT_HEADER; i++)
		CHECK_INT(msg[i], 0);
	CHECK_INT(msg[NET_REPORT_HEADER + 8 * NET_DENY_HOST_PORT], 1);
	const uint8_t *s = msg + NET_REPORT_HEADER + 8 * NET_DENY_SPOOFED;
	CHECK(s[0] == 5 && s[1] == 4 && s[2] == 3 && s[3] == 2 && s[4] == 1 && s[5] == 0);

	struct net_report seen = { { 0 } }, delta;
	CHECK_INT(accept_msg(&seen, msg, sizeof(msg), &delta), 0);
	CHECK(memcmp(&seen, &r, sizeof(r)) == 0);
	CHECK(memcmp(&delta, &r, sizeof(r)) == 0);
}

TEST(a_later_report_adds_only_what_is_new)
{
	struct net_report r = { { 0 } }, seen = { { 0 } }, delta;
	uint8_t msg[NET_REPORT_LEN];
	r.denied[NET_DENY_DNS_NAME] = 3;
	net_report_encode(&r, msg);
	CHECK_INT(accept_msg(&seen, msg, sizeof(msg), &delta), 0);
	CHECK_INT(delta.denied[NET_DENY_DNS_NAME], 3);
	/* the same report again adds nothing */
	CHECK_INT(accept_msg(&seen, msg, sizeof(msg), &delta), 0);
	for (int i = 0; i < NET_DENY_N; i++)
		CHECK_INT(delta.denied[i], 0);
	r.denied[NET_DENY_DNS_NAME] = 5;
	r.denied[NET_DENY_FRAGMENT] = 2;
	net_report_encode(&r, msg);
	CHECK_INT(accept_msg(&seen, msg, sizeof(msg), &delta), 0);
	CHECK_INT(delta.denied[NET_DENY_DNS_NAME], 2);
	CHECK_INT(delta.denied[NET_DENY_FRAGMENT], 2);
	CHECK_INT(delta.denied[NET_DENY_HOST_PORT], 0);
	CHECK_INT(seen.denied[NET_DENY_DNS_NAME], 5);
}

TEST(encoding_caps_each_count)
{
	struct net_report r = { { 0 } }, seen = { { 0 } }, delta;
	r.denied[NET_DENY_MALFORMED] = UINT64_MAX;
	uint8_t msg[NET_REPORT_LEN];
	net_report_encode(&r, msg);
	CHECK_INT(accept_msg(&seen, msg, sizeof(msg), &delta), 0);
	CHECK(delta.denied[NET_DENY_MALFORMED] == NET_REPORT_MAX_COUNT);
}

/* Each way a report can lie, refused with *seen untouched. */
TEST(a_malformed_report_is_refused_and_changes_nothing)
{
	struct net_report r = { { 0 } }, seen = { { 0 } }, delta;
	r.denied[NET_DENY_NOT_ALLOWED] = 10;
	uint8_t good[NET_REPORT_LEN], bad[NET_REPORT_LEN + 8];
	net_report_encode(&r, good);
	CHECK_INT(accept_msg(&seen, good, sizeof(good), &delta), 0);
	const struct net_report before = seen;

	/* short, long, empty */
	CHECK_INT(accept_msg(&seen, good, sizeof(good) - 1, &delta), -1);
	memcpy(bad, good, sizeof(good));
	memset(bad + sizeof(good), 0, 8);
	CHECK_INT(accept_msg(&seen, bad, sizeof(bad), &delta), -1);
	CHECK_INT(accept_msg(&seen, good, 0, &delta), -1);
	/* version, count, padding */
	memcpy(bad, good, sizeof(good));
	bad[0] = NET_REPORT_VERSION + 1;
	CHECK_INT(accept_msg(&seen, bad, sizeof(good), &delta), -1);
	memcpy(bad, good, sizeof(good));
	bad[1] = NET_DENY_N - 1;
	CHECK_INT(accept_msg(&seen, bad, sizeof(good), &delta), -1);
	memcpy(bad, good, sizeof(good));
	bad[7] = 1;
	CHECK_INT(accept_msg(&seen, bad, sizeof(good), &delta), -1);
	/* a count going down */
	memcpy(bad, good, sizeof(good));
	put64(bad + NET_REPORT_HEADER + 8 * NET_DENY_NOT_ALLOWED, 9);
	CHECK_INT(accept_msg(&seen, bad, sizeof(good), &delta), -1);
	/* a count above the cap, even in a reason not yet seen */
	memcpy(bad, good, sizeof(good));
	put64(bad + NET_REPORT_HEADER + 8 * NET_DENY_DNS_BUSY, NET_REPORT_MAX_COUNT + 1);
	CHECK_INT(accept_msg(&seen, bad, sizeof(good), &delta), -1);
	memcpy(bad, good, sizeof(good));
	put64(bad + NET_REPORT_HEADER + 8 * (NET_DENY_N - 1), UINT64_MAX);
	CHECK_INT(accept_msg(&seen, bad, sizeof(good), &delta), -1);
	CHECK(memcmp(&seen, &before, sizeof(seen)) == 0);
	/* at the cap exactly: accepted */
	memcpy(bad, good, sizeof(good));
	put64(bad + NET_REPORT_HEADER + 8 * NET_DENY_DNS_BUSY, NET_REPORT_MAX_COUNT);
	CHECK_INT(accept_msg(&seen, bad, sizeof(good), &delta), 0);
	CHECK(delta.denied[NET_DENY_DNS_BUSY] == NET_REPORT_MAX_COUNT);
	CHECK_INT(delta.denied[NET_DENY_NOT_ALLOWED], 0);
}
