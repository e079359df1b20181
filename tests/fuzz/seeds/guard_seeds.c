/* Writes seeds for fuzz_net_guard into argv[1], one frame each as
 * seed-<what>, made by the unit tests' builder (tests/unit/net/
 * guest_frame.c): frames each rule of the guard passes and drops, so that
 * the fuzzer starts on both sides of every bound. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guest_frame.h"
#include "net/net_dns.h"
#include "net/net_frame.h"
#include "proto/proto_net_addr.h"

#define ALLOWED 0xcb00710au /* 203.0.113.10: fuzz_guard.c's allow rule */
#define DENIED 0xcb0071c8u  /* 203.0.113.200: its deny rule */

static const char *dir;

static void save(const char *what, const uint8_t *b, size_t n)
{
	char path[4096];
	if ((size_t)snprintf(path, sizeof(path), "%s/seed-%s", dir, what) >= sizeof(path)) {
		fprintf(stderr, "guard_seeds: path too long\n");
		exit(1);
	}
	FILE *f = fopen(path, "wb");
	if (f == NULL || fwrite(b, 1, n, f) != n || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

static struct gframe_ip to(uint32_t dst)
{
	return (struct gframe_ip){ .dst = dst };
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: guard_seeds DIR\n");
		return 2;
	}
	dir = argv[1];
	uint8_t b[GFRAME_MAX], q[GFRAME_MAX];
	size_t n;
	save("syn-allowed", b, gframe_tcp(b, to(ALLOWED), 80, NET_TCP_SYN, 0));
	save("syn-denied", b, gframe_tcp(b, to(DENIED), 443, NET_TCP_SYN, 0));
	save("syn-fin-denied", b, gframe_tcp(b, to(DENIED), 443, NET_TCP_SYN | NET_TCP_FIN, 0));
	save("syn-ack-denied", b, gframe_tcp(b, to(DENIED), 443, NET_TCP_SYN | NET_TCP_ACK, 0));
	save("ack-data", b, gframe_tcp(b, to(ALLOWED), 80, NET_TCP_ACK, 100));
	save("syn-gateway-host-port", b, gframe_tcp(b, to(NET_ADDR_GATEWAY), 8000, NET_TCP_SYN, 0));
	save("syn-gateway-other-port", b, gframe_tcp(b, to(NET_ADDR_GATEWAY), 8001, NET_TCP_SYN, 0));
	save("syn-spoofed", b, gframe_tcp(b, (struct gframe_ip){ .src = NET_ADDR_GUEST + 1, .dst = ALLOWED }, 80, NET_TCP_SYN, 0));
	save("syn-first-fragment", b, gframe_tcp(b, (struct gframe_ip){ .dst = ALLOWED, .frag = 0x2000 }, 80, NET_TCP_SYN, 0));
	save("syn-last-fragment", b, gframe_tcp(b, (struct gframe_ip){ .dst = ALLOWED, .frag = 0x0001 }, 80, NET_TCP_SYN, 0));
	save("syn-df", b, gframe_tcp(b, (struct gframe_ip){ .dst = ALLOWED, .frag = 0x4000 }, 80, NET_TCP_SYN, 0));
	save("syn-ip-options", b, gframe_tcp(b, (struct gframe_ip){ .dst = DENIED, .ihl = 15 }, 22, NET_TCP_SYN, 0));
	n = gframe_tcp(b, to(ALLOWED), 80, NET_TCP_SYN, 0);
	b[NET_ETH_HLEN] = 0x44;
	save("syn-bad-ihl", b, n);
	save("udp-allowed", b, gframe_udp(b, to(ALLOWED), 123, (const uint8_t *)"time?", 5));
	save("udp-denied", b, gframe_udp(b, to(DENIED), 123, (const uint8_t *)"time?", 5));
	save("udp-always-denied-allowed", b, gframe_udp(b, to(0xc0000207), 80, (const uint8_t *)"x", 1));
	save("icmp-echo-denied", b, gframe_icmp(b, to(DENIED), NET_ICMP_ECHO));
	save("icmp-unreach-denied", b, gframe_icmp(b, to(DENIED), NET_ICMP_UNREACH));
	save("dns-a", b, gframe_udp(b, to(NET_ADDR_DNS), 53, q, gframe_dns_query(q, "good.test", NET_DNS_TYPE_A)));
	save("dns-denied-name", b, gframe_udp(b, to(NET_ADDR_DNS), 53, q, gframe_dns_query(q, "bad.test", NET_DNS_TYPE_A)));
	save("dns-aaaa", b, gframe_udp(b, to(NET_ADDR_DNS), 53, q, gframe_dns_query(q, "good.test", 28)));
	save("dns-tcp", b, gframe_tcp(b, to(NET_ADDR_DNS), 53, NET_TCP_SYN, 0));
	save("dns-other-port", b, gframe_udp(b, to(NET_ADDR_DNS), 5353, (const uint8_t *)"x", 1));
	save("arp", b, gframe_arp(b, NET_ADDR_GATEWAY));
	save("arp-truncated", b, gframe_arp(b, NET_ADDR_GATEWAY) - 1);
	save("ipv6", b, gframe_ethertype(b, 0x86dd, 60));
	n = gframe_tcp(q, to(ALLOWED), 80, NET_TCP_SYN, 0);
	memcpy(b, q, 12);
	b[12] = 0x81, b[13] = 0x00, b[14] = 0, b[15] = 1;
	memcpy(b + 16, q + 12, n - 12);
	save("vlan-syn", b, n + 4);
	return 0;
}
