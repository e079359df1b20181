/* The helper's denials by reason (net_denial.c, net_guard.c) and its
 * reports to the daemon (net_report_send.c): each kind of frame the guard
 * refuses counts under its own reason and nothing else; a report is sent
 * when the counts changed and the last one was read, so at most one waits
 * on the socket, and the final one goes whatever waits. */
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include "guest_frame.h"
#include "harness.h"
#include "helper_fixture.h"
#include "net/net_dns.h"
#include "proto/proto_net_addr.h"

static struct net_helper *h;

/* The frame fed to the guard moved exactly the count of `reason`, by one
 * (NET_DENY_N: moved none). */
static int counts_as(enum net_deny_reason reason, const uint8_t *b, size_t n)
{
	struct net_report before = h->report;
	bool was_dirty = h->report_dirty;
	net_guard_input(h, b, n);
	for (int i = 0; i < NET_DENY_N; i++) {
		uint64_t want = before.denied[i] + (i == (int)reason ? 1 : 0);
		if (h->report.denied[i] != want)
			return 0;
	}
	return reason == NET_DENY_N ? h->report_dirty == was_dirty : h->report_dirty;
}

static struct gframe_ip to(uint32_t dst)
{
	return (struct gframe_ip){ .dst = dst };
}

TEST(each_refusal_counts_under_its_reason)
{
	h = hf_reset();
	uint8_t b[GFRAME_MAX];
	/* passed: nothing counted */
	CHECK(counts_as(NET_DENY_N, b, gframe_tcp(b, to(HF_ALLOWED), 80, NET_TCP_SYN, 0)));
	CHECK(counts_as(NET_DENY_N, b, gframe_arp(b, NET_ADDR_GATEWAY)));
	CHECK(!h->report_dirty);
	/* the policy */
	CHECK(counts_as(NET_DENY_HOST_PORT, b, gframe_tcp(b, to(NET_ADDR_GATEWAY), HF_HOST_PORT + 1, NET_TCP_SYN, 0)));
	CHECK(counts_as(NET_DENY_HOST_PORT, b, gframe_icmp(b, to(0x7f000001), NET_ICMP_ECHO)));
	CHECK(counts_as(NET_DENY_DENY_RULE, b, gframe_tcp(b, to(HF_DENIED), 443, NET_TCP_SYN, 0)));
	CHECK(counts_as(NET_DENY_DENIED_RANGE, b, gframe_tcp(b, to(0xa9fea9fe), 80, NET_TCP_SYN, 0)));
	CHECK(counts_as(NET_DENY_NOT_ALLOWED, b, gframe_udp(b, to(0x08080808), 53, (const uint8_t *)"x", 1)));
	CHECK(counts_as(NET_DENY_DNS_PORT, b, gframe_tcp(b, to(NET_ADDR_DNS), 53, NET_TCP_SYN, 0)));
	CHECK(counts_as(NET_DENY_DNS_PORT, b, gframe_icmp(b, to(NET_ADDR_DNS), NET_ICMP_ECHO)));
	uint8_t q[GFRAME_MAX];
	size_t qn = gframe_dns_query(q, "example.com", NET_DNS_TYPE_A);
	CHECK(counts_as(NET_DENY_DNS_NAME, b, gframe_udp(b, to(NET_ADDR_DNS), 53, q, qn)));
	/* an allowed name without a resolver (dns_servers: []) is no denial */
	qn = gframe_dns_query(q, "good.test", NET_DNS_TYPE_A);
	CHECK(counts_as(NET_DENY_N, b, gframe_udp(b, to(NET_ADDR_DNS), 53, q, qn)));
	CHECK_INT(h->denials, 7);
	/* the guard's drops, not counted in h->denials (the policy's) */
	size_t n = gframe_tcp(b, to(HF_ALLOWED), 80, NET_TCP_SYN, 0);
	CHECK(counts_as(NET_DENY_MALFORMED, b, NET_ETH_HLEN + 19));
	CHECK(counts_as(NET_DENY_MALFORMED, b, n - 1));
	CHECK(counts_as(NET_DENY_MALFORMED, b, gframe_arp(b, NET_ADDR_GATEWAY) - 1));
	CHECK(counts_as(NET_DENY_NOT_IPV4, b, gframe_ethertype(b, 0x86dd, 60)));
	uint8_t gre[24] = { 0 };
	CHECK(counts_as(NET_DENY_NOT_IPV4, b, gframe_ipv4(b, &(struct gframe_ip){ .dst = HF_ALLOWED, .proto = 47 }, gre, sizeof(gre))));
	CHECK(counts_as(NET_DENY_FRAGMENT, b, gframe_tcp(b, (struct gframe_ip){ .dst = HF_ALLOWED, .frag = 0x2000 }, 80, NET_TCP_SYN, 0)));
	CHECK(counts_as(NET_DENY_SPOOFED, b, gframe_tcp(b, (struct gframe_ip){ .src = 0x0a000263, .dst = HF_ALLOWED }, 80, NET_TCP_SYN, 0)));
	CHECK_INT(h->denials, 7);
}

TEST(a_count_stops_at_the_cap)
{
	h = hf_reset();
	h->report.denied[NET_DENY_SPOOFED] = NET_REPORT_MAX_COUNT - 1;
	net_denial_count(h, NET_DENY_SPOOFED);
	net_denial_count(h, NET_DENY_SPOOFED);
	CHECK(h->report.denied[NET_DENY_SPOOFED] == NET_REPORT_MAX_COUNT);
	net_denial_count(h, NET_DENY_N); /* out of range: ignored */
	CHECK(h->report.denied[NET_DENY_SPOOFED] == NET_REPORT_MAX_COUNT);
}

/* The next report waiting on fd, accepted against *seen; -1 when none. */
static int next_report(int fd, struct net_report *seen)
{
	uint8_t buf[NET_REPORT_LEN + 1];
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n < 0)
		return -1;
	struct net_report delta;
	sbx_error_t err = NULL;
	int rc = net_report_accept(seen, buf, (size_t)n, &delta, &err);
	sbx_error_free(&err);
	return rc < 0 ? -2 : 0;
}

TEST(a_report_goes_when_the_counts_changed_and_the_last_one_was_read)
{
	h = hf_reset();
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
	struct net_report seen = { { 0 } };
	/* nothing to say */
	net_report_push(h, sv[0], false);
	CHECK_INT(next_report(sv[1], &seen), -1);
	net_denial_count(h, NET_DENY_FRAGMENT);
	net_report_push(h, sv[0], false);
	CHECK(!h->report_dirty);
	/* unchanged: nothing more */
	net_report_push(h, sv[0], false);
	net_denial_count(h, NET_DENY_SPOOFED);
	/* changed, but the first one is unread: held back */
	net_report_push(h, sv[0], false);
	CHECK(h->report_dirty);
	CHECK_INT(next_report(sv[1], &seen), 0);
	CHECK_INT(seen.denied[NET_DENY_FRAGMENT], 1);
	CHECK_INT(seen.denied[NET_DENY_SPOOFED], 0);
	CHECK_INT(next_report(sv[1], &seen), -1);
	/* read: the next one goes */
	net_report_push(h, sv[0], false);
	CHECK_INT(next_report(sv[1], &seen), 0);
	CHECK_INT(seen.denied[NET_DENY_SPOOFED], 1);
	/* the final report goes beside an unread one */
	net_denial_count(h, NET_DENY_MALFORMED);
	net_report_push(h, sv[0], false);
	net_denial_count(h, NET_DENY_MALFORMED);
	net_report_push(h, sv[0], false);
	net_report_push(h, sv[0], true);
	CHECK(!h->report_dirty);
	CHECK_INT(next_report(sv[1], &seen), 0);
	CHECK_INT(seen.denied[NET_DENY_MALFORMED], 1);
	CHECK_INT(next_report(sv[1], &seen), 0);
	CHECK_INT(seen.denied[NET_DENY_MALFORMED], 2);
	CHECK_INT(next_report(sv[1], &seen), -1);
	/* the daemon gone: a failed send, no signal, retried later */
	close(sv[1]);
	net_denial_count(h, NET_DENY_MALFORMED);
	net_report_push(h, sv[0], true);
	CHECK(h->report_dirty);
	close(sv[0]);
}
