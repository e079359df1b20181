/* The DNS codec: queries from the guest (hostile) and the answers built
 * for them. */
#include <stdio.h>

#include "guest_frame.h"
#include "harness.h"
#include "net/net_dns.h"

TEST(parses_a_query)
{
	uint8_t b[GFRAME_MAX];
	size_t n = gframe_dns_query(b, "files.PyPI.org", NET_DNS_TYPE_A);
	struct net_dns_query q;
	CHECK_INT(net_dns_parse_query(b, n, &q), 0);
	CHECK_STR(q.name, "files.PyPI.org");
	CHECK_INT(q.id, 0xabcd);
	CHECK_INT(q.qtype, NET_DNS_TYPE_A);
	CHECK_INT(q.qclass, NET_DNS_CLASS_IN);
	CHECK_INT(q.question_len, n - 12);
}

TEST(rejects_malformed_queries)
{
	uint8_t b[GFRAME_MAX];
	size_t n = gframe_dns_query(b, "a.example", NET_DNS_TYPE_A);
	struct net_dns_query q;
	for (size_t cut = 0; cut < n; cut++)
		CHECK_INT(net_dns_parse_query(b, cut, &q), -1);
	b[2] |= 0x80; /* a response */
	CHECK_INT(net_dns_parse_query(b, n, &q), -1);
	b[2] &= 0x7f;
	b[5] = 2; /* two questions */
	CHECK_INT(net_dns_parse_query(b, n, &q), -1);
	b[5] = 1;
	b[12] = 0xc0; /* a compression pointer */
	CHECK_INT(net_dns_parse_query(b, n, &q), -1);
	/* a name over 253 bytes */
	char longname[300];
	memset(longname, 'a', sizeof(longname));
	for (int i = 63; i < 299; i += 64)
		longname[i] = '.';
	longname[299] = '\0';
	n = gframe_dns_query(b, longname, NET_DNS_TYPE_A);
	CHECK_INT(net_dns_parse_query(b, n, &q), -1);
}

TEST(builds_answers)
{
	uint8_t b[GFRAME_MAX], out[NET_DNS_MAX];
	size_t n = gframe_dns_query(b, "pypi.org", NET_DNS_TYPE_A);
	struct net_dns_query q;
	CHECK_INT(net_dns_parse_query(b, n, &q), 0);
	uint32_t addrs[2] = { 0x97654321, 0x0a000001 }, ttls[2] = { 300, 60 };
	size_t m = net_dns_build_reply(&q, NET_DNS_NOERROR, addrs, ttls, 2, out);
	CHECK_INT(m, n + 32);
	CHECK(out[0] == 0xab && out[1] == 0xcd);
	CHECK_INT(out[2], 0x81); /* QR, RD */
	CHECK_INT(out[3], 0x80); /* RA, NOERROR */
	CHECK(out[5] == 1 && out[7] == 2);
	CHECK(memcmp(out + 12, b + 12, n - 12) == 0);
	const uint8_t *a = out + n;
	CHECK(a[0] == 0xc0 && a[1] == 0x0c && a[3] == 1 && a[5] == 1);
	CHECK(a[8] == 1 && a[9] == 44); /* TTL 300 */
	CHECK(a[12] == 0x97 && a[15] == 0x21);
	m = net_dns_build_reply(&q, NET_DNS_REFUSED, addrs, ttls, 2, out);
	CHECK_INT(m, n);
	CHECK_INT(out[3] & 15, NET_DNS_REFUSED);
	CHECK_INT(out[7], 0);
}

TEST(answers_never_exceed_512_bytes)
{
	char name[254];
	memset(name, 'b', 253);
	for (int i = 63; i < 253; i += 64)
		name[i] = '.';
	name[253] = '\0';
	uint8_t b[GFRAME_MAX], out[NET_DNS_MAX];
	size_t n = gframe_dns_query(b, name, NET_DNS_TYPE_A);
	struct net_dns_query q;
	CHECK_INT(net_dns_parse_query(b, n, &q), 0);
	uint32_t addrs[NET_DNS_MAX_ADDRS] = { 0 }, ttls[NET_DNS_MAX_ADDRS] = { 0 };
	size_t m = net_dns_build_reply(&q, NET_DNS_NOERROR, addrs, ttls, NET_DNS_MAX_ADDRS, out);
	CHECK(m <= NET_DNS_MAX);
	CHECK_INT((m - n) % 16, 0);
	CHECK_INT(out[7], (m - n) / 16);
}
