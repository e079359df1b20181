/* Frames as a guest writes them, for the tests and fuzz seeds of src/net:
 * Ethernet from the guest's MAC to the gateway's, an IPv4 header (its
 * checksum filled in; options zero-filled), then the L4 header the guard
 * reads.  Each builder returns the frame's length; a frame that would not
 * fit in GFRAME_MAX bytes aborts (a test's mistake, never truncated). */
#ifndef SBX_TEST_GUEST_FRAME_H
#define SBX_TEST_GUEST_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define GFRAME_MAX 2048
#define GFRAME_SPORT 50000
#define GFRAME_SEQ 0x1000u

extern const uint8_t GFRAME_GUEST_MAC[6], GFRAME_GW_MAC[6];

struct gframe_ip {
	uint32_t src;  /* host byte order; 0 = NET_ADDR_GUEST */
	uint32_t dst;
	uint8_t proto;
	uint16_t frag; /* flags and offset as on the wire: 0x2000 MF, 0x4000 DF, low 13 bits offset/8 */
	uint8_t ihl;   /* header length in 32-bit words; 0 = 5 */
};

/* Ethernet + IPv4 + the l4 bytes. */
size_t gframe_ipv4(uint8_t out[GFRAME_MAX], const struct gframe_ip *ip, const uint8_t *l4, size_t l4len);
/* A TCP segment from GFRAME_SPORT, seq GFRAME_SEQ, with flags and data_len
 * zero bytes of payload (ip->proto is set to TCP). */
size_t gframe_tcp(uint8_t out[GFRAME_MAX], struct gframe_ip ip, uint16_t dport, uint8_t flags, size_t data_len);
/* A UDP datagram from GFRAME_SPORT carrying data. */
size_t gframe_udp(uint8_t out[GFRAME_MAX], struct gframe_ip ip, uint16_t dport, const uint8_t *data, size_t len);
/* An ICMP message of this type (code 0, 8 bytes of header, 8 of data). */
size_t gframe_icmp(uint8_t out[GFRAME_MAX], struct gframe_ip ip, uint8_t type);
/* An ARP request from the guest for target (28 bytes after Ethernet). */
size_t gframe_arp(uint8_t out[GFRAME_MAX], uint32_t target);
/* Any other ethertype, with len bytes of payload (IPv6's first nibble 6). */
size_t gframe_ethertype(uint8_t out[GFRAME_MAX], uint16_t ethertype, size_t len);
/* A DNS query (id 0xabcd, RD, class IN) for name: the message alone. */
size_t gframe_dns_query(uint8_t out[GFRAME_MAX], const char *name, uint16_t qtype);

#endif
