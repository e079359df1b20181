/* Ethernet / IPv4 / TCP / UDP / ICMP as the network helper sees them.
 *
 * Every frame comes from the guest (hostile): net_frame_parse checks each
 * length against the buffer before reading.  The builders write the
 * helper's own answers (a TCP RST, an ICMP unreachable, a UDP reply) back
 * towards the frame's sender. */
#ifndef SBX_NET_FRAME_H
#define SBX_NET_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NET_ETH_HLEN 14
#define NET_ETHERTYPE_IPV4 0x0800
#define NET_ETHERTYPE_ARP 0x0806
#define NET_ARP_HLEN 28 /* an ARP packet for IPv4 over Ethernet */
#define NET_PROTO_ICMP 1
#define NET_PROTO_TCP 6
#define NET_PROTO_UDP 17

#define NET_TCP_FIN 0x01
#define NET_TCP_SYN 0x02
#define NET_TCP_RST 0x04
#define NET_TCP_ACK 0x10

#define NET_ICMP_ECHO 8
#define NET_ICMP_UNREACH 3
#define NET_ICMP_UNREACH_FILTERED 13 /* "communication administratively prohibited" */

struct net_frame {
	const uint8_t *eth;
	size_t len;
	uint16_t ethertype;
	/* IPv4 only (is_ipv4): addresses in host byte order */
	bool is_ipv4;
	bool fragment; /* MF set or a non-zero offset: no trustworthy L4 header */
	const uint8_t *ip;
	size_t ip_hlen, ip_len; /* header length, total length (<= what was received) */
	uint8_t proto;
	uint32_t src, dst;
	/* TCP / UDP (has_ports) */
	bool has_ports;
	uint16_t sport, dport;
	uint8_t tcp_flags;
	uint32_t seq, ack;
	const uint8_t *payload;
	size_t payload_len;
	/* ICMP */
	uint8_t icmp_type;
};

/* 0 for a frame whose headers fit, -1 for a malformed one (drop it).  A
 * frame of another ethertype parses with is_ipv4 false. */
int net_frame_parse(const uint8_t *buf, size_t len, struct net_frame *f);

/* The RST that refuses the TCP segment f; returns its length, or 0 when
 * f carries RST itself (never answered) or cap is too small. */
size_t net_frame_tcp_rst(const struct net_frame *f, uint8_t *out, size_t cap);
/* An ICMP destination unreachable (code) quoting f's IP header and first
 * 8 bytes of payload; 0 when cap is too small. */
size_t net_frame_icmp_unreach(const struct net_frame *f, uint8_t code, uint8_t *out, size_t cap);
/* A UDP datagram back to f's sender from f's destination carrying data;
 * 0 when cap is too small. */
size_t net_frame_udp_reply(const struct net_frame *f, const uint8_t *data, size_t len, uint8_t *out, size_t cap);

/* Internet checksum of the bytes, folded, continuing from sum. */
uint16_t net_checksum(const uint8_t *p, size_t len, uint32_t sum);

#endif
