/* net_guard_input: which frames a guest (root, writing any bytes to its
 * NIC) gets past the guard to slirp, and what it is answered.  Each rule
 * on both sides of its bound: IPv6 and other ethertypes dropped, ARP
 * passed whole, fragments dropped, spoofed sources dropped, only a TCP SYN
 * without ACK (and every UDP datagram and ICMP message) judged by the
 * policy, truncated and lying headers dropped, IP options skipped. */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guest_frame.h"
#include "harness.h"
#include "helper_fixture.h"
#include "net/net_dns.h"
#include "proto/proto_net_addr.h"

static struct net_helper *h;

/* Feeds one frame to the guard; 1 when it reached slirp, byte for byte. */
static int passes(const uint8_t *b, size_t n)
{
	unsigned before = hf_slirp_count();
	net_guard_input(h, b, n);
	if (hf_slirp_count() == before)
		return 0;
	size_t len;
	const uint8_t *got = hf_slirp_last(&len);
	return hf_slirp_count() == before + 1 && len == n && memcmp(got, b, n) == 0;
}

/* True when the guest has no answer waiting. */
static int silent(void)
{
	uint8_t buf[GFRAME_MAX];
	struct net_frame f;
	return hf_to_guest(buf, sizeof(buf), &f) == 0;
}

static struct gframe_ip to(uint32_t dst)
{
	return (struct gframe_ip){ .dst = dst };
}

TEST(an_honest_syn_reaches_slirp_unanswered)
{
	h = hf_reset();
	uint8_t b[GFRAME_MAX];
	CHECK(passes(b, gframe_tcp(b, to(HF_ALLOWED), 80, NET_TCP_SYN, 0)));
	CHECK(passes(b, gframe_tcp(b, to(NET_ADDR_GATEWAY), HF_HOST_PORT, NET_TCP_SYN, 0)));
	CHECK(silent());
	CHECK_INT(h->denials, 0);
}

TEST(a_denied_syn_is_refused_with_a_reset_from_its_destination)
{
	h = hf_reset();
	uint8_t b[GFRAME_MAX], a[GFRAME_MAX];
	CHECK(!passes(b, gframe_tcp(b, to(HF_DENIED), 443, NET_TCP_SYN, 0)));
	CHECK(!passes(b, gframe_tcp(b, to(NET_ADDR_GATEWAY), HF_HOST_PORT + 1, NET_TCP_SYN, 0)));
	CHECK_INT(h->denials, 2);
	struct net_frame r;
	CHECK(hf_to_guest(a, sizeof(a), &r) > 0);
	CHECK(r.proto == NET_PROTO_TCP && r.src == HF_DENIED && r.dst == NET_ADDR_GUEST);
	CHECK(r.sport == 443 && r.dport == GFRAME_SPORT);
	CHECK_INT(r.tcp_flags, NET_TCP_RST | NET_TCP_ACK);
	CHECK_INT(r.ack, GFRAME_SEQ + 1);
	CHECK(hf_to_guest(a, sizeof(a), &r) > 0);
	CHECK(r.src == NET_ADDR_GATEWAY && r.sport == HF_HOST_PORT + 1 && (r.tcp_flags & NET_TCP_RST));
	CHECK(silent());
}

TEST(a_syn_with_any_other_flag_but_ack_is_judged)
{
	static const uint8_t extra[] = { NET_TCP_FIN, NET_TCP_RST, 0x08 /* PSH */, 0x20 /* URG */, 0xc0 /* ECE CWR */ };
	h = hf_reset();
	uint8_t b[GFRAME_MAX];
	for (size_t i = 0; i < sizeof(extra); i++) {
		if (passes(b, gframe_tcp(b, to(HF_DENIED), 443, NET_TCP_SYN | extra[i], 0)))
			sbx_test_fail(__FILE__, __LINE__, "SYN|0x%02x to a denied address reached slirp", extra[i]);
		if (!passes(b, gframe_tcp(b, to(HF_ALLOWED), 443, NET_TCP_SYN | extra[i], 0)))
			sbx_test_fail(__FILE__, __LINE__, "SYN|0x%02x to an allowed address was dropped", extra[i]);
	}
	CHECK_INT(h->denials, sizeof(extra));
	/* SYN|FIN is answered; a segment carrying RST never is */
	uint8_t a[GFRAME_MAX];
	struct net_frame r;
	CHECK(hf_to_guest(a, sizeof(a), &r) > 0);
	CHECK_INT(r.tcp_flags, NET_TCP_RST | NET_TCP_ACK);
	CHECK_INT(r.ack, GFRAME_SEQ + 2);
	for (size_t i = 2; i < sizeof(extra); i++)
		CHECK(hf_to_guest(a, sizeof(a), &r) > 0 && r.sport == 443);
	CHECK(silent());
}

TEST(segments_of_a_flow_pass_unjudged_for_slirp_to_reset)
{
	static const uint8_t flags[] = { NET_TCP_SYN | NET_TCP_ACK, NET_TCP_ACK, NET_TCP_FIN | NET_TCP_ACK, NET_TCP_RST,
					 NET_TCP_FIN, 0, 0x18 /* PSH ACK */ };
	h = hf_reset();
	uint8_t b[GFRAME_MAX];
	for (size_t i = 0; i < sizeof(flags); i++) {
		if (!passes(b, gframe_tcp(b, to(HF_DENIED), 443, flags[i], i == 6 ? 100 : 0)))
			sbx_test_fail(__FILE__, __LINE__, "flags 0x%02x to a denied address did not reach slirp", flags[i]);
	}
	CHECK_INT(h->denials, 0);
	CHECK(silent());
}

TEST(udp_is_judged_datagram_by_datagram)
{
	h = hf_reset();
	uint8_t b[GFRAME_MAX], d[GFRAME_MAX], a[GFRAME_MAX];
	CHECK(passes(b, gframe_udp(b, to(HF_ALLOWED), 123, (const uint8_t *)"time?", 5)));
	CHECK(!passes(d, gframe_udp(d, to(HF_DENIED), 123, (const uint8_t *)"time?", 5)));
	CHECK(passes(b, gframe_udp(b, to(HF_ALLOWED), 123, (const uint8_t *)"time?", 5)));
	CHECK_INT(h->denials, 1);
	struct net_frame r;
	CHECK(hf_to_guest(a, sizeof(a), &r) > 0);
	CHECK(r.proto == NET_PROTO_ICMP && r.icmp_type == NET_ICMP_UNREACH && r.dst == NET_ADDR_GUEST);
	CHECK_INT(r.ip[r.ip_hlen + 1], NET_ICMP_UNREACH_FILTERED);
	CHECK(memcmp(r.payload, d + NET_ETH_HLEN, 28) == 0); /* quotes the IP header and 8 bytes */
	CHECK(silent());
}

TEST(icmp_echo_is_judged_and_icmp_errors_are_never_answered)
{
	h = hf_reset();
	uint8_t b[GFRAME_MAX], a[GFRAME_MAX];
	CHECK(passes(b, gframe_icmp(b, to(HF_ALLOWED), NET_ICMP_ECHO)));
	CHECK(!passes(b, gframe_icmp(b, to(HF_DENIED), NET_ICMP_ECHO)));
	struct net_frame r;
	CHECK(hf_to_guest(a, sizeof(a), &r) > 0);
	CHECK(r.proto == NET_PROTO_ICMP && r.icmp_type == NET_ICMP_UNREACH);
	/* RFC 1122: no ICMP error about an ICMP error (nor about a reply) */
	CHECK(!passes(b, gframe_icmp(b, to(HF_DENIED), NET_ICMP_UNREACH)));
	CHECK(!passes(b, gframe_icmp(b, to(HF_DENIED), 0 /* echo reply */)));
	CHECK(silent());
	CHECK_INT(h->denials, 3);
}

TEST(ipv6_and_other_ethertypes_are_dropped)
{
	static const uint16_t types[] = { 0x86dd /* IPv6 */, 0x8100 /* VLAN */, 0x88a8 /* QinQ */, 0x8035 /* RARP */,
					  0x0842 /* wake-on-LAN */, 0x88cc /* LLDP */, 0x0000, 0xffff };
	h = hf_reset();
	uint8_t b[GFRAME_MAX];
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (passes(b, gframe_ethertype(b, types[i], 60)))
			sbx_test_fail(__FILE__, __LINE__, "ethertype 0x%04x reached slirp", types[i]);
	}
	/* an IPv4 packet behind a VLAN tag is still not IPv4 to the guard */
	uint8_t inner[GFRAME_MAX];
	size_t n = gframe_tcp(inner, to(HF_ALLOWED), 80, NET_TCP_SYN, 0);
	memcpy(b, inner, 12);
	b[12] = 0x81, b[13] = 0x00, b[14] = 0, b[15] = 1;
	memcpy(b + 16, inner + 12, n - 12);
	CHECK(!passes(b, n + 4));
	CHECK(silent());
	CHECK_INT(h->denials, 0);
}

TEST(arp_passes_whole_and_a_truncated_arp_is_dropped)
{
	h = hf_reset();
	uint8_t b[GFRAME_MAX];
	size_t n = gframe_arp(b, NET_ADDR_GATEWAY);
	CHECK_INT(n, 42);
	CHECK(passes(b, n));
	CHECK(passes(b, 60)); /* padded to Ethernet's minimum */
	for (size_t cut = NET_ETH_HLEN; cut < n; cut++) {
		if (passes(b, cut))
			sbx_test_fail(__FILE__, __LINE__, "an ARP frame of %zu bytes reached slirp", cut);
	}
	CHECK(silent());
}

TEST(fragments_are_dropped_whichever_part_they_are)
{
	/* MF on the first; an offset on a middle and the last; DF alone and
	 * the reserved bit alone are no fragment */
	static const uint16_t frags[] = { 0x2000, 0x2001, 0x0001, 0x1fff, 0x6000, 0x2000 | 0x8000 };
	h = hf_reset();
	uint8_t b[GFRAME_MAX];
	for (size_t i = 0; i < sizeof(frags) / sizeof(frags[0]); i++) {
		struct gframe_ip ip = { .dst = HF_ALLOWED, .frag = frags[i] };
		if (passes(b, gframe_tcp(b, ip, 80, NET_TCP_SYN, 0)))
			sbx_test_fail(__FILE__, __LINE__, "a fragment (0x%04x) reached slirp", frags[i]);
		ip.dst = HF_DENIED; /* dropped, not judged: no reset */
		if (passes(b, gframe_udp(b, ip, 53, (const uint8_t *)"x", 1)))
			sbx_test_fail(__FILE__, __LINE__, "a UDP fragment (0x%04x) reached slirp", frags[i]);
	}
	CHECK(silent());
	CHECK_INT(h->denials, 0);
	CHECK(passes(b, gframe_tcp(b, (struct gframe_ip){ .dst = HF_ALLOWED, .frag = 0x4000 }, 80, NET_TCP_SYN, 0)));
	CHECK(passes(b, gframe_tcp(b, (struct gframe_ip){ .dst = HF_ALLOWED, .frag = 0x8000 }, 80, NET_TCP_SYN, 0)));
}

TEST(spoofed_sources_are_dropped_unanswered)
{
	static const uint32_t srcs[] = { NET_ADDR_GUEST - 1, NET_ADDR_GUEST + 1, NET_ADDR_GATEWAY, NET_ADDR_DNS,
					 0x7f000001, 0xffffffff, 0x0a01020f /* 10.1.2.15 */, 0x0f02000a /* byte-swapped */ };
	h = hf_reset();
	uint8_t b[GFRAME_MAX], q[GFRAME_MAX];
	size_t qn = gframe_dns_query(q, "example.test", NET_DNS_TYPE_A);
	for (size_t i = 0; i < sizeof(srcs) / sizeof(srcs[0]); i++) {
		struct gframe_ip ip = { .src = srcs[i], .dst = HF_ALLOWED };
		CHECK(!passes(b, gframe_tcp(b, ip, 80, NET_TCP_SYN, 0)));
		CHECK(!passes(b, gframe_tcp(b, ip, 80, NET_TCP_ACK, 10)));
		CHECK(!passes(b, gframe_udp(b, ip, 53, q, qn)));
		CHECK(!passes(b, gframe_icmp(b, ip, NET_ICMP_ECHO)));
		ip.dst = HF_DENIED;
		CHECK(!passes(b, gframe_tcp(b, ip, 80, NET_TCP_SYN, 0)));
		ip.dst = NET_ADDR_DNS;
		CHECK(!passes(b, gframe_udp(b, ip, 53, q, qn)));
	}
	/* 0.0.0.0 is the builder's "the guest": write it by hand */
	size_t n = gframe_tcp(b, to(HF_ALLOWED), 80, NET_TCP_SYN, 0);
	memset(b + NET_ETH_HLEN + 12, 0, 4);
	CHECK(!passes(b, n));
	CHECK(silent());
	CHECK_INT(h->denials, 0);
}

TEST(a_frame_cut_anywhere_never_reaches_slirp)
{
	h = hf_reset();
	uint8_t b[GFRAME_MAX];
	size_t lens[3];
	for (int kind = 0; kind < 3; kind++) {
		size_t n = kind == 0 ? gframe_tcp(b, to(HF_ALLOWED), 80, NET_TCP_SYN, 0)
			 : kind == 1 ? gframe_udp(b, to(HF_ALLOWED), 123, (const uint8_t *)"abc", 3)
				     : gframe_icmp(b, to(HF_ALLOWED), NET_ICMP_ECHO);
		lens[kind] = n;
		for (size_t cut = 0; cut < n; cut++) {
			if (passes(b, cut))
				sbx_test_fail(__FILE__, __LINE__, "kind %d cut at %zu of %zu reached slirp", kind, cut, n);
		}
		CHECK(passes(b, n));
	}
	CHECK(lens[0] == 54 && lens[1] == 45 && lens[2] == 50);
	CHECK(silent());
}

TEST(the_ip_total_length_bounds_the_packet_not_the_frame)
{
	h = hf_reset();
	uint8_t b[GFRAME_MAX];
	size_t n = gframe_tcp(b, to(HF_ALLOWED), 80, NET_TCP_SYN, 0);
	memset(b + n, 0, 6);
	CHECK(passes(b, n + 6)); /* Ethernet padding after the packet */
	uint8_t *ip = b + NET_ETH_HLEN;
	ip[3] = (uint8_t)(ip[3] + 1); /* one byte more than the frame holds */
	CHECK(!passes(b, n));
	CHECK(passes(b, n + 1));
	ip[3] = 39; /* less than IP + TCP headers */
	CHECK(!passes(b, n));
	ip[2] = 0, ip[3] = 19; /* less than the IP header */
	CHECK(!passes(b, n));
	CHECK(silent());
}

TEST(a_bad_version_or_header_length_is_dropped)
{
	h = hf_reset();
	uint8_t b[GFRAME_MAX];
	size_t n = gframe_tcp(b, to(HF_ALLOWED), 80, NET_TCP_SYN, 0);
	uint8_t *ip = b + NET_ETH_HLEN;
	for (uint8_t ihl = 0; ihl < 5; ihl++) {
		ip[0] = (uint8_t)(0x40 | ihl);
		if (passes(b, n))
			sbx_test_fail(__FILE__, __LINE__, "IHL %u reached slirp", ihl);
	}
	ip[0] = 0x46; /* 24 bytes of header: the TCP header no longer fits */
	CHECK(!passes(b, n));
	ip[0] = 0x4f; /* 60 > the whole packet */
	CHECK(!passes(b, n));
	for (uint8_t v = 0; v < 16; v++) {
		ip[0] = (uint8_t)(v << 4 | 5);
		if (v != 4 && passes(b, n))
			sbx_test_fail(__FILE__, __LINE__, "IP version %u reached slirp", v);
	}
	ip[0] = 0x45;
	CHECK(passes(b, n));
	CHECK(silent());
	CHECK_INT(h->denials, 0);
}

TEST(ip_options_are_skipped_to_find_the_ports)
{
	h = hf_reset();
	uint8_t b[GFRAME_MAX], a[GFRAME_MAX];
	for (uint8_t ihl = 6; ihl <= 15; ihl++) {
		struct gframe_ip ip = { .dst = HF_DENIED, .ihl = ihl };
		size_t n = gframe_tcp(b, ip, (uint16_t)(1000 + ihl), NET_TCP_SYN, 0);
		memset(b + NET_ETH_HLEN + 20, 1, (size_t)(ihl - 5) * 4); /* NOPs */
		CHECK(!passes(b, n));
		struct net_frame r;
		CHECK(hf_to_guest(a, sizeof(a), &r) > 0);
		CHECK_INT(r.sport, 1000 + ihl);
		CHECK_INT(r.dport, GFRAME_SPORT);
		ip.dst = HF_ALLOWED;
		CHECK(passes(b, gframe_tcp(b, ip, 80, NET_TCP_SYN, 0)));
	}
	CHECK(silent());
}

TEST(tcp_and_udp_lengths_are_checked_both_ways)
{
	h = hf_reset();
	uint8_t b[GFRAME_MAX];
	size_t n = gframe_tcp(b, to(HF_ALLOWED), 80, NET_TCP_SYN, 4);
	uint8_t *tcp = b + NET_ETH_HLEN + 20;
	tcp[12] = 4 << 4; /* data offset under 20 bytes */
	CHECK(!passes(b, n));
	tcp[12] = 7 << 4; /* 28 > the 24-byte segment */
	CHECK(!passes(b, n));
	tcp[12] = 6 << 4; /* 24: options, no payload */
	CHECK(passes(b, n));
	n = gframe_udp(b, to(HF_ALLOWED), 123, (const uint8_t *)"abcd", 4);
	uint8_t *udp = b + NET_ETH_HLEN + 20;
	udp[5] = 7; /* under the UDP header */
	CHECK(!passes(b, n));
	udp[5] = 13; /* beyond the packet */
	CHECK(!passes(b, n));
	udp[5] = 12;
	CHECK(passes(b, n));
	udp[5] = 8; /* shorter than the packet: trailing bytes */
	CHECK(passes(b, n));
	CHECK(silent());
}

TEST(other_ip_protocols_are_dropped)
{
	static const uint8_t protos[] = { 0, 2 /* IGMP */, 4 /* IP in IP */, 41 /* IPv6 in IP */, 47 /* GRE */,
					  50 /* ESP */, 132 /* SCTP */, 255 };
	h = hf_reset();
	uint8_t b[GFRAME_MAX], payload[40] = { 0 };
	for (size_t i = 0; i < sizeof(protos); i++) {
		struct gframe_ip ip = { .dst = HF_ALLOWED, .proto = protos[i] };
		if (passes(b, gframe_ipv4(b, &ip, payload, sizeof(payload))))
			sbx_test_fail(__FILE__, __LINE__, "IP protocol %u reached slirp", protos[i]);
	}
	CHECK(silent());
	CHECK_INT(h->denials, 0);
}

TEST(the_dns_address_answers_udp_53_and_refuses_the_rest)
{
	h = hf_reset();
	uint8_t b[GFRAME_MAX], a[GFRAME_MAX], q[GFRAME_MAX];
	size_t qn = gframe_dns_query(q, "example.test", NET_DNS_TYPE_A);
	CHECK(!passes(b, gframe_udp(b, to(NET_ADDR_DNS), 53, q, qn)));
	struct net_frame r;
	CHECK(hf_to_guest(a, sizeof(a), &r) > 0);
	CHECK(r.proto == NET_PROTO_UDP && r.src == NET_ADDR_DNS && r.sport == 53 && r.dport == GFRAME_SPORT);
	CHECK(r.payload_len >= 12 && r.payload[0] == 0xab && r.payload[1] == 0xcd);
	CHECK_INT(r.payload[3] & 15, NET_DNS_SERVFAIL); /* no resolver in this helper */
	CHECK(!passes(b, gframe_tcp(b, to(NET_ADDR_DNS), 53, NET_TCP_SYN, 0)));
	CHECK(hf_to_guest(a, sizeof(a), &r) > 0);
	CHECK(r.proto == NET_PROTO_TCP && (r.tcp_flags & NET_TCP_RST));
	CHECK(!passes(b, gframe_udp(b, to(NET_ADDR_DNS), 5353, q, qn)));
	CHECK(hf_to_guest(a, sizeof(a), &r) > 0);
	CHECK(r.proto == NET_PROTO_ICMP && r.icmp_type == NET_ICMP_UNREACH);
	/* any TCP segment: a flow to it never exists */
	CHECK(!passes(b, gframe_tcp(b, to(NET_ADDR_DNS), 53, NET_TCP_ACK, 0)));
	CHECK(hf_to_guest(a, sizeof(a), &r) > 0);
	CHECK(r.proto == NET_PROTO_TCP && r.tcp_flags == NET_TCP_RST);
	CHECK_INT(h->denials, 3);
	/* not a query: no answer; ICMP to it: nothing */
	CHECK(!passes(b, gframe_udp(b, to(NET_ADDR_DNS), 53, (const uint8_t *)"junk", 4)));
	CHECK(!passes(b, gframe_icmp(b, to(NET_ADDR_DNS), NET_ICMP_ECHO)));
	CHECK(silent());
	CHECK_INT(h->denials, 3);
}

static int64_t mtime_ns(int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -1;
	return (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
}

TEST(payload_stamps_the_beacon_and_a_bare_syn_does_not)
{
	h = hf_reset();
	int fd = memfd_create("beacon", MFD_CLOEXEC);
	CHECK(fd >= 0);
	const struct timespec epoch[2] = { { 0, 0 }, { 0, 0 } };
	CHECK_INT(futimens(fd, epoch), 0);
	h->beacon_fd = fd;
	uint8_t b[GFRAME_MAX];
	CHECK(passes(b, gframe_tcp(b, to(HF_ALLOWED), 80, NET_TCP_SYN, 0)));
	CHECK(!passes(b, gframe_udp(b, to(HF_DENIED), 80, (const uint8_t *)"x", 1)));
	int64_t before = mtime_ns(fd);
	CHECK(passes(b, gframe_tcp(b, to(HF_ALLOWED), 80, NET_TCP_ACK, 1)));
	int64_t after = mtime_ns(fd);
	h->beacon_fd = -1;
	close(fd);
	CHECK_INT(before, 0);
	CHECK(after > 0);
}

TEST(denials_past_the_table_are_counted_and_the_queue_stays_bounded)
{
	h = hf_reset();
	uint8_t b[GFRAME_MAX];
	for (unsigned port = 1; port <= NET_DENIAL_SLOTS + 1; port++) {
		if (passes(b, gframe_tcp(b, to(HF_DENIED), (uint16_t)port, NET_TCP_SYN, 0)))
			sbx_test_fail(__FILE__, __LINE__, "port %u reached slirp", port);
	}
	CHECK(h->denial_table_full);
	CHECK_INT(h->denials, NET_DENIAL_SLOTS + 1);
	CHECK(!passes(b, gframe_tcp(b, to(HF_DENIED), 1, NET_TCP_SYN, 0)));
	CHECK_INT(h->denials, NET_DENIAL_SLOTS + 2);
	/* the guest read none of the resets: the queue holds what it may */
	CHECK_INT(h->txq_n, NET_TXQ_FRAMES);
}
