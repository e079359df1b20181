/* Frames as a guest writes them (see guest_frame.h). */
#include "guest_frame.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/net_frame.h"
#include "proto/proto_net_addr.h"

const uint8_t GFRAME_GUEST_MAC[6] = { 0x52, 0x54, 0, 0x12, 0x34, 0x56 };
const uint8_t GFRAME_GW_MAC[6] = { 0x52, 0x55, 10, 0, 2, 2 };

static void fits(size_t len)
{
	if (len > GFRAME_MAX) {
		fprintf(stderr, "guest_frame: a frame of %zu bytes\n", len);
		abort();
	}
}

/* n bytes of v, big-endian */
static void put_be(uint8_t *p, uint32_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

static size_t ether(uint8_t *out, uint16_t ethertype)
{
	memcpy(out, GFRAME_GW_MAC, 6);
	memcpy(out + 6, GFRAME_GUEST_MAC, 6);
	put_be(out + 12, ethertype, 2);
	return NET_ETH_HLEN;
}

size_t gframe_ipv4(uint8_t out[GFRAME_MAX], const struct gframe_ip *ipv, const uint8_t *l4, size_t l4len)
{
	size_t hlen = (size_t)(ipv->ihl != 0 ? ipv->ihl : 5) * 4;
	fits(NET_ETH_HLEN + hlen + l4len);
	uint8_t *ip = out + ether(out, NET_ETHERTYPE_IPV4);
	memset(ip, 0, hlen);
	ip[0] = (uint8_t)(0x40 | hlen / 4);
	put_be(ip + 2, (uint16_t)(hlen + l4len), 2);
	put_be(ip + 4, 0x5678, 2);
	put_be(ip + 6, ipv->frag, 2);
	ip[8] = 64;
	ip[9] = ipv->proto;
	put_be(ip + 12, ipv->src != 0 ? ipv->src : NET_ADDR_GUEST, 4);
	put_be(ip + 16, ipv->dst, 4);
	put_be(ip + 10, net_checksum(ip, hlen, 0), 2);
	memcpy(ip + hlen, l4, l4len);
	return NET_ETH_HLEN + hlen + l4len;
}

size_t gframe_tcp(uint8_t out[GFRAME_MAX], struct gframe_ip ip, uint16_t dport, uint8_t flags, size_t data_len)
{
	uint8_t seg[GFRAME_MAX] = { 0 };
	fits(20 + data_len);
	put_be(seg, GFRAME_SPORT, 2);
	put_be(seg + 2, dport, 2);
	put_be(seg + 4, GFRAME_SEQ, 4);
	seg[12] = 5 << 4;
	seg[13] = flags;
	put_be(seg + 14, 0xffff, 2);
	ip.proto = NET_PROTO_TCP;
	return gframe_ipv4(out, &ip, seg, 20 + data_len);
}

size_t gframe_udp(uint8_t out[GFRAME_MAX], struct gframe_ip ip, uint16_t dport, const uint8_t *data, size_t len)
{
	uint8_t dgram[GFRAME_MAX];
	fits(8 + len);
	put_be(dgram, GFRAME_SPORT, 2);
	put_be(dgram + 2, dport, 2);
	put_be(dgram + 4, (uint16_t)(8 + len), 2);
	put_be(dgram + 6, 0, 2);
	memcpy(dgram + 8, data, len);
	ip.proto = NET_PROTO_UDP;
	return gframe_ipv4(out, &ip, dgram, 8 + len);
}

size_t gframe_icmp(uint8_t out[GFRAME_MAX], struct gframe_ip ip, uint8_t type)
{
	uint8_t msg[16] = { type, 0, 0, 0, 0x12, 0x34, 0, 1, 'p', 'i', 'n', 'g', 'p', 'i', 'n', 'g' };
	put_be(msg + 2, net_checksum(msg, sizeof(msg), 0), 2);
	ip.proto = NET_PROTO_ICMP;
	return gframe_ipv4(out, &ip, msg, sizeof(msg));
}

size_t gframe_arp(uint8_t out[GFRAME_MAX], uint32_t target)
{
	uint8_t *a = out + ether(out, NET_ETHERTYPE_ARP);
	memset(out, 0xff, 6); /* a request is broadcast */
	put_be(a, 1, 2); /* Ethernet */
	put_be(a + 2, NET_ETHERTYPE_IPV4, 2);
	a[4] = 6;
	a[5] = 4;
	put_be(a + 6, 1, 2); /* request */
	memcpy(a + 8, GFRAME_GUEST_MAC, 6);
	put_be(a + 14, NET_ADDR_GUEST, 4);
	memset(a + 18, 0, 6);
	put_be(a + 24, target, 4);
	return NET_ETH_HLEN + 28;
}

size_t gframe_ethertype(uint8_t out[GFRAME_MAX], uint16_t ethertype, size_t len)
{
	fits(NET_ETH_HLEN + len);
	uint8_t *p = out + ether(out, ethertype);
	memset(p, 0, len);
	if (len > 0)
		p[0] = 0x60;
	return NET_ETH_HLEN + len;
}

size_t gframe_dns_query(uint8_t out[GFRAME_MAX], const char *name, uint16_t qtype)
{
	static const uint8_t head[12] = { 0xab, 0xcd, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0 };
	fits(12 + strlen(name) + 2 + 4);
	memcpy(out, head, sizeof(head));
	size_t off = sizeof(head);
	while (*name != '\0') {
		const char *dot = strchr(name, '.');
		size_t l = dot != NULL ? (size_t)(dot - name) : strlen(name);
		out[off++] = (uint8_t)l;
		memcpy(out + off, name, l);
		off += l;
		name += l + (dot != NULL);
	}
	out[off++] = 0;
	put_be(out + off, qtype, 2);
	put_be(out + off + 2, 1, 2);
	return off + 4;
}
