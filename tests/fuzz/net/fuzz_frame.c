/* Frames from a hostile guest: the parser, and the answers built for what
 * parsed (each must parse again, addressed back to the sender). */
#include <stdlib.h>
#include <string.h>

#include "proto/proto_net_addr.h"
#include "net/net_frame.h"
#include "net/net_policy.h"

static void check_answer(const struct net_frame *f, const uint8_t *out, size_t n)
{
	struct net_frame r;
	if (n == 0)
		return;
	if (net_frame_parse(out, n, &r) < 0 || !r.is_ipv4 || r.src != f->dst || r.dst != f->src ||
	    memcmp(out, f->eth + 6, 6) != 0 || net_checksum(r.ip, r.ip_hlen, 0) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct net_frame f;
	if (net_frame_parse(data, size, &f) < 0 || !f.is_ipv4)
		return 0;
	/* No payload (not TCP or UDP) is a NULL pointer: no arithmetic on it. */
	if (f.ip + f.ip_len > data + size || (f.payload != NULL && f.payload + f.payload_len > data + size))
		abort();
	uint8_t out[NET_ETH_HLEN + 20 + 8 + 65536];
	check_answer(&f, out, net_frame_tcp_rst(&f, out, sizeof(out)));
	check_answer(&f, out, net_frame_icmp_unreach(&f, NET_ICMP_UNREACH_FILTERED, out, sizeof(out)));
	if (f.payload_len < 2048)
		check_answer(&f, out, net_frame_udp_reply(&f, f.payload, f.payload_len, out, sizeof(out)));
	struct net_policy p = { .gateway = NET_ADDR_GATEWAY, .host_ports = { 8000 }, .n_host_ports = 1 };
	struct net_verdict v;
	net_policy_judge(&p, NULL, 0, f.dst, f.proto, f.dport, &v);
	return 0;
}
