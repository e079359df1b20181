/* Frame parsing of hostile bytes and the helper's own answers: RST, ICMP
 * unreachable and UDP replies with valid checksums, addressed back to the
 * sender. */
#include <stdio.h>

#include "guest_frame.h"
#include "harness.h"
#include "net/net_frame.h"

/* Ethernet + IPv4 (src 10.0.2.15, dst) + l4 bytes. */
static size_t build(uint8_t *out, uint8_t proto, uint32_t dst, const uint8_t *l4, size_t l4len)
{
	return gframe_ipv4(out, &(struct gframe_ip){ .dst = dst, .proto = proto }, l4, l4len);
}

static const uint8_t SYN[20] = { 0xc3, 0x50, 0x00, 0x16, 0, 0, 0x10, 0, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff };

/* The checksum over the pseudo header and the segment folds to 0. */
static int l4_sum_ok(const uint8_t *frame, size_t len)
{
	const uint8_t *ip = frame + 14;
	size_t l4 = len - 34;
	uint32_t sum = (uint32_t)(ip[12] << 8 | ip[13]) + (uint32_t)(ip[14] << 8 | ip[15]) +
		       (uint32_t)(ip[16] << 8 | ip[17]) + (uint32_t)(ip[18] << 8 | ip[19]) + ip[9] + (uint32_t)l4;
	return net_checksum(ip + 20, l4, sum) == 0;
}

TEST(parses_a_syn)
{
	uint8_t buf[GFRAME_MAX];
	size_t n = build(buf, NET_PROTO_TCP, 0x0a000001, SYN, sizeof(SYN));
	struct net_frame f;
	CHECK_INT(net_frame_parse(buf, n, &f), 0);
	CHECK(f.is_ipv4 && !f.fragment && f.has_ports);
	CHECK(f.src == 0x0a00020f && f.dst == 0x0a000001);
	CHECK_INT(f.sport, 50000);
	CHECK_INT(f.dport, 22);
	CHECK_INT(f.tcp_flags, NET_TCP_SYN);
	CHECK_INT(f.seq, 0x1000);
	CHECK_INT(f.payload_len, 0);
}

TEST(rejects_truncated_and_lying_headers)
{
	uint8_t buf[GFRAME_MAX];
	size_t n = build(buf, NET_PROTO_TCP, 0x0a000001, SYN, sizeof(SYN));
	struct net_frame f;
	for (size_t cut = 0; cut < n; cut++) {
		int rc = net_frame_parse(buf, cut, &f);
		if (rc == 0 && cut >= 14)
			sbx_test_fail(__FILE__, __LINE__, "a frame cut at %zu parsed", cut);
	}
	buf[14] = 0x4f; /* IHL 60 > total */
	CHECK_INT(net_frame_parse(buf, n, &f), -1);
	buf[14] = 0x45;
	buf[14 + 20 + 12] = 0xf0; /* TCP data offset 60 > segment */
	CHECK_INT(net_frame_parse(buf, n, &f), -1);
	buf[14 + 20 + 12] = 0x50;
	buf[16] = 0xff; /* total length beyond the frame */
	CHECK_INT(net_frame_parse(buf, n, &f), -1);
}

TEST(fragments_carry_no_ports)
{
	uint8_t buf[GFRAME_MAX];
	size_t n = build(buf, NET_PROTO_UDP, 0x08080808, SYN, 8);
	buf[14 + 6] = 0x20; /* MF */
	struct net_frame f;
	CHECK_INT(net_frame_parse(buf, n, &f), 0);
	CHECK(f.fragment && !f.has_ports);
}

TEST(rst_answers_a_syn)
{
	uint8_t buf[GFRAME_MAX], out[128];
	size_t n = build(buf, NET_PROTO_TCP, 0xa9fea9fe, SYN, sizeof(SYN));
	struct net_frame f, r;
	CHECK_INT(net_frame_parse(buf, n, &f), 0);
	size_t m = net_frame_tcp_rst(&f, out, sizeof(out));
	CHECK_INT(m, 54);
	CHECK(memcmp(out, GFRAME_GUEST_MAC, 6) == 0 && memcmp(out + 6, GFRAME_GW_MAC, 6) == 0);
	CHECK_INT(net_frame_parse(out, m, &r), 0);
	CHECK(r.src == 0xa9fea9fe && r.dst == 0x0a00020f);
	CHECK_INT(r.sport, 22);
	CHECK_INT(r.dport, 50000);
	CHECK_INT(r.tcp_flags, NET_TCP_RST | NET_TCP_ACK);
	CHECK_INT(r.ack, 0x1001);
	CHECK_INT(net_checksum(out + 14, 20, 0), 0);
	CHECK(l4_sum_ok(out, m));
	/* a RST is never answered */
	buf[14 + 20 + 13] = NET_TCP_RST;
	CHECK_INT(net_frame_parse(buf, n, &f), 0);
	CHECK_INT(net_frame_tcp_rst(&f, out, sizeof(out)), 0);
	CHECK_INT(net_frame_tcp_rst(&f, out, 10), 0);
}

TEST(icmp_unreachable_quotes_the_datagram)
{
	uint8_t udp[12] = { 0x30, 0x39, 0x00, 0x35, 0x00, 0x0c, 0, 0, 'a', 'b', 'c', 'd' };
	uint8_t buf[GFRAME_MAX], out[128];
	size_t n = build(buf, NET_PROTO_UDP, 0x0a000001, udp, sizeof(udp));
	struct net_frame f, r;
	CHECK_INT(net_frame_parse(buf, n, &f), 0);
	size_t m = net_frame_icmp_unreach(&f, NET_ICMP_UNREACH_FILTERED, out, sizeof(out));
	CHECK_INT(m, 14 + 20 + 8 + 28);
	CHECK_INT(net_frame_parse(out, m, &r), 0);
	CHECK_INT(r.proto, NET_PROTO_ICMP);
	CHECK_INT(r.icmp_type, NET_ICMP_UNREACH);
	CHECK_INT(out[14 + 21], NET_ICMP_UNREACH_FILTERED);
	CHECK(memcmp(out + 14 + 28, buf + 14, 28) == 0);
	CHECK_INT(net_checksum(out + 14 + 20, m - 34, 0), 0);
}

TEST(udp_reply_goes_back_to_the_sender)
{
	uint8_t udp[12] = { 0x30, 0x39, 0x00, 0x35, 0x00, 0x0c, 0, 0, 'a', 'b', 'c', 'd' };
	uint8_t buf[GFRAME_MAX], out[128];
	size_t n = build(buf, NET_PROTO_UDP, 0x0a000203, udp, sizeof(udp));
	struct net_frame f, r;
	CHECK_INT(net_frame_parse(buf, n, &f), 0);
	size_t m = net_frame_udp_reply(&f, (const uint8_t *)"hello", 5, out, sizeof(out));
	CHECK_INT(m, 14 + 20 + 8 + 5);
	CHECK_INT(net_frame_parse(out, m, &r), 0);
	CHECK(r.src == 0x0a000203 && r.dst == 0x0a00020f);
	CHECK_INT(r.sport, 53);
	CHECK_INT(r.dport, 12345);
	CHECK(r.payload_len == 5 && memcmp(r.payload, "hello", 5) == 0);
	CHECK(l4_sum_ok(out, m));
	CHECK_INT(net_frame_udp_reply(&f, (const uint8_t *)"hello", 5, out, 40), 0);
}
