/* Frame parsing and the helper's own answers (see net_frame.h). */
#include "net/net_frame.h"

#include <string.h>

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

uint16_t net_checksum(const uint8_t *p, size_t len, uint32_t sum)
{
	for (size_t i = 0; i + 1 < len; i += 2)
		sum += get16(p + i);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static int parse_l4(struct net_frame *f)
{
	const uint8_t *l4 = f->ip + f->ip_hlen;
	size_t n = f->ip_len - f->ip_hlen;
	if (f->proto == NET_PROTO_TCP) {
		if (n < 20)
			return -1;
		size_t off = (size_t)(l4[12] >> 4) * 4;
		if (off < 20 || off > n)
			return -1;
		f->has_ports = true;
		f->sport = get16(l4);
		f->dport = get16(l4 + 2);
		f->seq = get32(l4 + 4);
		f->ack = get32(l4 + 8);
		f->tcp_flags = l4[13];
		f->payload = l4 + off;
		f->payload_len = n - off;
	} else if (f->proto == NET_PROTO_UDP) {
		if (n < 8)
			return -1;
		size_t ulen = get16(l4 + 4);
		if (ulen < 8 || ulen > n)
			return -1;
		f->has_ports = true;
		f->sport = get16(l4);
		f->dport = get16(l4 + 2);
		f->payload = l4 + 8;
		f->payload_len = ulen - 8;
	} else if (f->proto == NET_PROTO_ICMP) {
		if (n < 8)
			return -1;
		f->icmp_type = l4[0];
		f->payload = l4 + 8;
		f->payload_len = n - 8;
	}
	return 0;
}

int net_frame_parse(const uint8_t *buf, size_t len, struct net_frame *f)
{
	memset(f, 0, sizeof(*f));
	if (len < NET_ETH_HLEN)
		return -1;
	f->eth = buf;
	f->len = len;
	f->ethertype = get16(buf + 12);
	if (f->ethertype != NET_ETHERTYPE_IPV4)
		return 0;
	const uint8_t *ip = buf + NET_ETH_HLEN;
	size_t n = len - NET_ETH_HLEN;
	if (n < 20 || ip[0] >> 4 != 4)
		return -1;
	size_t hlen = (size_t)(ip[0] & 0x0f) * 4;
	size_t total = get16(ip + 2);
	if (hlen < 20 || total < hlen || total > n)
		return -1;
	f->is_ipv4 = true;
	f->ip = ip;
	f->ip_hlen = hlen;
	f->ip_len = total;
	f->proto = ip[9];
	f->src = get32(ip + 12);
	f->dst = get32(ip + 16);
	uint16_t frag = get16(ip + 6);
	f->fragment = (frag & 0x2000) != 0 || (frag & 0x1fff) != 0;
	if (f->fragment)
		return 0;
	return parse_l4(f);
}

/* Ethernet and IPv4 headers of an answer to f (addresses swapped); the
 * IP checksum is filled in, the L4 part is the caller's. */
static void answer_headers(const struct net_frame *f, uint8_t proto, size_t l4_len, uint8_t *out)
{
	memcpy(out, f->eth + 6, 6);
	memcpy(out + 6, f->eth, 6);
	put16(out + 12, NET_ETHERTYPE_IPV4);
	uint8_t *ip = out + NET_ETH_HLEN;
	memset(ip, 0, 20);
	ip[0] = 0x45;
	put16(ip + 2, (uint16_t)(20 + l4_len));
	put16(ip + 6, 0x4000); /* DF */
	ip[8] = 64;
	ip[9] = proto;
	put32(ip + 12, f->dst);
	put32(ip + 16, f->src);
	put16(ip + 10, net_checksum(ip, 20, 0));
}

static uint32_t pseudo_sum(uint32_t src, uint32_t dst, uint8_t proto, size_t len)
{
	return (src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff) + proto + (uint32_t)len;
}

size_t net_frame_tcp_rst(const struct net_frame *f, uint8_t *out, size_t cap)
{
	size_t total = NET_ETH_HLEN + 20 + 20;
	if (!f->is_ipv4 || f->proto != NET_PROTO_TCP || !f->has_ports || (f->tcp_flags & NET_TCP_RST) || cap < total)
		return 0;
	answer_headers(f, NET_PROTO_TCP, 20, out);
	uint8_t *t = out + NET_ETH_HLEN + 20;
	memset(t, 0, 20);
	put16(t, f->dport);
	put16(t + 2, f->sport);
	if (f->tcp_flags & NET_TCP_ACK) {
		put32(t + 4, f->ack);
		t[13] = NET_TCP_RST;
	} else {
		uint32_t span = (uint32_t)f->payload_len + !!(f->tcp_flags & NET_TCP_SYN) + !!(f->tcp_flags & NET_TCP_FIN);
		put32(t + 8, f->seq + span);
		t[13] = NET_TCP_RST | NET_TCP_ACK;
	}
	t[12] = 5 << 4;
	put16(t + 16, net_checksum(t, 20, pseudo_sum(f->dst, f->src, NET_PROTO_TCP, 20)));
	return total;
}

size_t net_frame_icmp_unreach(const struct net_frame *f, uint8_t code, uint8_t *out, size_t cap)
{
	if (!f->is_ipv4)
		return 0;
	size_t quote = f->ip_hlen + 8 <= f->ip_len ? f->ip_hlen + 8 : f->ip_len;
	size_t l4 = 8 + quote, total = NET_ETH_HLEN + 20 + l4;
	if (cap < total)
		return 0;
	answer_headers(f, NET_PROTO_ICMP, l4, out);
	uint8_t *c = out + NET_ETH_HLEN + 20;
	memset(c, 0, 8);
	c[0] = NET_ICMP_UNREACH;
	c[1] = code;
	memcpy(c + 8, f->ip, quote);
	put16(c + 2, net_checksum(c, l4, 0));
	return total;
}

size_t net_frame_udp_reply(const struct net_frame *f, const uint8_t *data, size_t len, uint8_t *out, size_t cap)
{
	if (!f->is_ipv4 || f->proto != NET_PROTO_UDP || !f->has_ports || len > 65507)
		return 0;
	size_t l4 = 8 + len, total = NET_ETH_HLEN + 20 + l4;
	if (cap < total)
		return 0;
	answer_headers(f, NET_PROTO_UDP, l4, out);
	uint8_t *u = out + NET_ETH_HLEN + 20;
	put16(u, f->dport);
	put16(u + 2, f->sport);
	put16(u + 4, (uint16_t)l4);
	put16(u + 6, 0);
	memcpy(u + 8, data, len);
	uint16_t sum = net_checksum(u, l4, pseudo_sum(f->dst, f->src, NET_PROTO_UDP, l4));
	put16(u + 6, sum == 0 ? 0xffff : sum);
	return total;
}
