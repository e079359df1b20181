/* net_resolver's bounds, against an upstream DNS server on 127.0.0.1 that
 * this test plays (c-ares is real): at most NET_RESOLVER_MAX_PENDING
 * queries wait, the next is SERVFAIL at once; an answer gives the guest at
 * most NET_DNS_MAX_ADDRS addresses, drops those into always-denied ranges
 * and pins the rest for a TTL held within 5 s .. 1 day; what is not an A
 * query of class IN never goes upstream. */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "guest_frame.h"
#include "harness.h"
#include "helper_fixture.h"
#include "net/net_dns.h"
#include "proto/proto_net_addr.h"

static struct net_helper *h;
static int upstream = -1;
static char servers[32];

/* A helper whose resolver asks this test's upstream socket. */
static int start(void)
{
	h = hf_reset();
	if (upstream >= 0)
		close(upstream);
	upstream = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	if (upstream < 0 || bind(upstream, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(upstream, (struct sockaddr *)&a, &al) < 0)
		return -1;
	snprintf(servers, sizeof(servers), "127.0.0.1:%u", ntohs(a.sin_port));
	h->dns_servers = servers;
	sbx_error_t err = NULL;
	if (net_resolver_init(h, &err) < 0 || net_rules_add(&h->policy.deny, "denied.test", &err) < 0) {
		printf("# %s\n", sbx_error_msg(err));
		sbx_error_free(&err);
		return -1;
	}
	return 0;
}

/* The guest asks name (type qtype) from its usual port. */
static void ask(const char *name, uint16_t qtype)
{
	uint8_t q[GFRAME_MAX], b[GFRAME_MAX];
	size_t qn = gframe_dns_query(q, name, qtype);
	net_guard_input(h, b, gframe_udp(b, (struct gframe_ip){ .dst = NET_ADDR_DNS }, 53, q, qn));
}

/* The query c-ares sent upstream (waiting up to 10 s: a failure bound);
 * its sender in from. */
static int upstream_query(struct net_dns_query *q, struct sockaddr_in *from)
{
	uint8_t b[1024];
	struct pollfd p = { .fd = upstream, .events = POLLIN };
	if (poll(&p, 1, 10000) != 1)
		return -1;
	socklen_t fl = sizeof(*from);
	ssize_t n = recvfrom(upstream, b, sizeof(b), 0, (struct sockaddr *)from, &fl);
	return n < 0 ? -1 : net_dns_parse_query(b, (size_t)n, q);
}

/* Answers the next upstream query with n addresses from first (or rcode). */
static int upstream_answer(enum net_dns_rcode rcode, uint32_t first, size_t n, uint32_t ttl)
{
	struct net_dns_query q;
	struct sockaddr_in from;
	if (upstream_query(&q, &from) < 0)
		return -1;
	uint32_t addrs[32], ttls[32];
	for (size_t i = 0; i < n && i < 32; i++) {
		addrs[i] = first + (uint32_t)i;
		ttls[i] = ttl;
	}
	uint8_t out[NET_DNS_MAX];
	size_t len = net_dns_build_reply(&q, rcode, addrs, ttls, n, out);
	return sendto(upstream, out, len, 0, (struct sockaddr *)&from, sizeof(from)) == (ssize_t)len ? 0 : -1;
}

/* Runs c-ares until no query waits (10 s at most: a failure bound). */
static int settle(void)
{
	for (int round = 0; h->dns_pending > 0 && round < 100; round++) {
		ares_socket_t socks[ARES_GETSOCK_MAXNUM];
		unsigned mask = (unsigned)ares_getsock(h->ares, socks, ARES_GETSOCK_MAXNUM);
		struct pollfd p[ARES_GETSOCK_MAXNUM];
		int n = 0;
		for (int i = 0; i < ARES_GETSOCK_MAXNUM; i++) {
			if (mask & (1u << i))
				p[n++] = (struct pollfd){ .fd = socks[i], .events = POLLIN };
		}
		if (poll(p, (nfds_t)n, 100) < 0 && errno != EINTR)
			return -1;
		for (int i = 0; i < n; i++)
			ares_process_fd(h->ares, p[i].revents ? p[i].fd : ARES_SOCKET_BAD, ARES_SOCKET_BAD);
	}
	return h->dns_pending == 0 ? 0 : -1;
}

/* The guest's answer: rcode, and its addresses into addrs (count in *n). */
static int answer(uint32_t *addrs, size_t *n)
{
	uint8_t buf[GFRAME_MAX];
	struct net_frame f;
	if (hf_to_guest(buf, sizeof(buf), &f) == 0 || f.proto != NET_PROTO_UDP || f.src != NET_ADDR_DNS ||
	    f.dst != NET_ADDR_GUEST || f.dport != GFRAME_SPORT || f.payload_len < 12)
		return -1;
	const uint8_t *m = f.payload;
	*n = (size_t)(m[6] << 8 | m[7]);
	const uint8_t *a = m + f.payload_len - *n * 16;
	for (size_t i = 0; i < *n; i++, a += 16)
		addrs[i] = (uint32_t)a[12] << 24 | (uint32_t)a[13] << 16 | (uint32_t)a[14] << 8 | a[15];
	return m[3] & 15;
}

static int upstream_idle(void)
{
	uint8_t b[16];
	return recv(upstream, b, sizeof(b), 0) < 0 && errno == EAGAIN;
}

TEST(an_answer_reaches_the_guest_without_rebinding_addresses_and_pins_the_rest)
{
	CHECK_INT(start(), 0);
	ask("good.test", NET_DNS_TYPE_A);
	CHECK_INT(h->dns_pending, 1);
	/* 10.0.0.253: in 10/8, always denied (rebinding) */
	CHECK_INT(upstream_answer(NET_DNS_NOERROR, 0x0a0000fd, 1, 60), 0);
	CHECK_INT(settle(), 0);
	uint32_t addrs[32];
	size_t n;
	CHECK_INT(answer(addrs, &n), NET_DNS_NOERROR);
	CHECK_INT(n, 0);
	CHECK_INT(h->pins->n, 0);
	CHECK_INT(h->denials, 1);
	CHECK_INT(h->report.denied[NET_DENY_DNS_REBINDING], 1);
	ask("good.test", NET_DNS_TYPE_A);
	CHECK_INT(upstream_answer(NET_DNS_NOERROR, HF_ALLOWED, 2, 60), 0);
	CHECK_INT(settle(), 0);
	CHECK_INT(answer(addrs, &n), NET_DNS_NOERROR);
	CHECK_INT(n, 2);
	CHECK(addrs[0] == HF_ALLOWED && addrs[1] == HF_ALLOWED + 1);
	CHECK_INT(h->pins->n, 2);
	CHECK_STR(h->pins->v[0].name, "good.test");
}

TEST(an_answer_gives_at_most_NET_DNS_MAX_ADDRS_addresses)
{
	CHECK_INT(start(), 0);
	ask("many.test", NET_DNS_TYPE_A);
	CHECK_INT(upstream_answer(NET_DNS_NOERROR, HF_ALLOWED, NET_DNS_MAX_ADDRS, 60), 0);
	CHECK_INT(settle(), 0);
	uint32_t addrs[32];
	size_t n;
	CHECK_INT(answer(addrs, &n), NET_DNS_NOERROR);
	CHECK_INT(n, NET_DNS_MAX_ADDRS);
	ask("more.test", NET_DNS_TYPE_A);
	CHECK_INT(upstream_answer(NET_DNS_NOERROR, HF_ALLOWED + 100, NET_DNS_MAX_ADDRS + 4, 60), 0);
	CHECK_INT(settle(), 0);
	CHECK_INT(answer(addrs, &n), NET_DNS_NOERROR);
	CHECK_INT(n, NET_DNS_MAX_ADDRS);
	CHECK(addrs[0] == HF_ALLOWED + 100 && addrs[NET_DNS_MAX_ADDRS - 1] == HF_ALLOWED + 100 + NET_DNS_MAX_ADDRS - 1);
	CHECK_INT(h->pins->n, 2 * NET_DNS_MAX_ADDRS);
}

TEST(pins_last_the_ttl_held_between_5_s_and_a_day)
{
	static const uint32_t ttls[] = { 0, 4, 5, 6, 86399, 86400, 86401, 0x7fffffff };
	static const int64_t held[] = { 5, 5, 5, 6, 86399, 86400, 86400, 86400 };
	CHECK_INT(start(), 0);
	for (size_t i = 0; i < sizeof(ttls) / sizeof(ttls[0]); i++) {
		char name[32];
		snprintf(name, sizeof(name), "ttl%zu.test", i);
		ask(name, NET_DNS_TYPE_A);
		int64_t before = sbx_now_ms();
		CHECK_INT(upstream_answer(NET_DNS_NOERROR, HF_ALLOWED + (uint32_t)i, 1, ttls[i]), 0);
		CHECK_INT(settle(), 0);
		int64_t after = sbx_now_ms();
		const struct net_pin *p = &h->pins->v[h->pins->n - 1];
		CHECK_STR(p->name, name);
		if (p->expires_ms < before + held[i] * 1000 || p->expires_ms > after + held[i] * 1000)
			sbx_test_fail(__FILE__, __LINE__, "TTL %u: pinned for %lld ms, not %lld s", ttls[i],
				      (long long)(p->expires_ms - before), (long long)held[i]);
	}
	uint32_t addrs[32];
	size_t n;
	CHECK_INT(answer(addrs, &n), NET_DNS_NOERROR);
	CHECK_INT(n, 1);
}

TEST(nxdomain_upstream_is_nxdomain_to_the_guest)
{
	CHECK_INT(start(), 0);
	uint32_t addrs[32];
	size_t n;
	ask("nosuch.test", NET_DNS_TYPE_A);
	CHECK_INT(upstream_answer(NET_DNS_NXDOMAIN, 0, 0, 0), 0);
	CHECK_INT(settle(), 0);
	CHECK_INT(answer(addrs, &n), NET_DNS_NXDOMAIN);
	CHECK_INT(h->pins->n, 0);
}

TEST(only_a_queries_of_class_in_go_upstream)
{
	CHECK_INT(start(), 0);
	uint32_t addrs[32];
	size_t n;
	ask("good.test", 28 /* AAAA */);
	CHECK_INT(answer(addrs, &n), NET_DNS_NOERROR);
	CHECK_INT(n, 0);
	ask("denied.test", NET_DNS_TYPE_A);
	CHECK_INT(answer(addrs, &n), NET_DNS_REFUSED);
	CHECK_INT(h->denials, 1);
	CHECK_INT(h->report.denied[NET_DENY_DNS_NAME], 1);
	ask("not_a_host!.test", NET_DNS_TYPE_A);
	CHECK_INT(answer(addrs, &n), NET_DNS_REFUSED);
	/* class CH, and an inverse query (opcode 1) */
	uint8_t q[GFRAME_MAX], b[GFRAME_MAX];
	size_t qn = gframe_dns_query(q, "good.test", NET_DNS_TYPE_A);
	q[qn - 1] = 3;
	net_guard_input(h, b, gframe_udp(b, (struct gframe_ip){ .dst = NET_ADDR_DNS }, 53, q, qn));
	CHECK_INT(answer(addrs, &n), NET_DNS_REFUSED);
	q[qn - 1] = 1;
	q[2] = 0x09;
	net_guard_input(h, b, gframe_udp(b, (struct gframe_ip){ .dst = NET_ADDR_DNS }, 53, q, qn));
	CHECK_INT(answer(addrs, &n), NET_DNS_NOTIMP);
	CHECK_INT(h->dns_pending, 0);
	CHECK(upstream_idle());
}

TEST(at_most_NET_RESOLVER_MAX_PENDING_queries_wait_the_next_is_servfail)
{
	CHECK_INT(start(), 0);
	for (int i = 0; i < NET_RESOLVER_MAX_PENDING; i++) {
		char name[32];
		snprintf(name, sizeof(name), "q%d.silent.test", i);
		ask(name, NET_DNS_TYPE_A);
	}
	CHECK_INT(h->dns_pending, NET_RESOLVER_MAX_PENDING);
	uint32_t addrs[32];
	size_t n;
	CHECK_INT(answer(addrs, &n), -1); /* nothing yet */
	CHECK_INT(h->report.denied[NET_DENY_DNS_BUSY], 0);
	ask("one-more.silent.test", NET_DNS_TYPE_A);
	CHECK_INT(answer(addrs, &n), NET_DNS_SERVFAIL);
	CHECK_INT(h->report.denied[NET_DENY_DNS_BUSY], 1);
	CHECK_INT(h->dns_pending, NET_RESOLVER_MAX_PENDING);
	/* stopping frees every waiting query (ASan: nothing leaks) */
	net_resolver_free(h);
	CHECK_INT(h->dns_pending, 0);
	CHECK_INT(answer(addrs, &n), -1);
}
