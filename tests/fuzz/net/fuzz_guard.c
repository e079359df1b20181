/* Frames from a hostile guest through net_guard_input, the helper's whole
 * frame path compiled in (the policy, the denials, the queue to the guest,
 * the resolver without upstream servers); slirp_input is this file's.
 * What must hold:
 *   - slirp gets only ARP with a whole header, or an unfragmented IPv4
 *     packet from the guest's address, not to the DNS address, carrying
 *     TCP, UDP or ICMP;
 *   - of those, a TCP SYN without ACK, a UDP datagram or an ICMP message
 *     is one the policy allows;
 *   - every frame the guest is answered with parses as IPv4, goes to the
 *     guest's address and comes from the address it was sent to. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/clock.h"
#include "proto/proto_net_addr.h"
#include "net/net_helper.h"

static struct net_helper H;
static struct net_pins pins;
static int guest_fd = -1;
static uint32_t input_dst;

static void fail(const char *why)
{
	fprintf(stderr, "fuzz_net_guard: %s\n", why);
	abort();
}

void slirp_input(Slirp *slirp, const uint8_t *pkt, int pkt_len)
{
	struct net_frame f;
	if (pkt_len < 0 || net_frame_parse(pkt, (size_t)pkt_len, &f) < 0)
		fail("a malformed frame reached slirp");
	if (f.ethertype == NET_ETHERTYPE_ARP) {
		if ((size_t)pkt_len < NET_ETH_HLEN + NET_ARP_HLEN)
			fail("a truncated ARP frame reached slirp");
		return;
	}
	if (!f.is_ipv4 || f.fragment || f.src != NET_ADDR_GUEST || f.dst == NET_ADDR_DNS)
		fail("a non-IPv4 frame, a fragment, a spoofed source or a frame to the DNS address reached slirp");
	if (f.proto != NET_PROTO_TCP && f.proto != NET_PROTO_UDP && f.proto != NET_PROTO_ICMP)
		fail("another IP protocol reached slirp");
	if (f.proto == NET_PROTO_TCP && (f.tcp_flags & (NET_TCP_SYN | NET_TCP_ACK)) != NET_TCP_SYN)
		return; /* slirp resets a segment of a flow it does not have */
	struct net_verdict v;
	net_policy_judge(&H.policy, H.pins, sbx_now_ms(), f.dst, f.proto, f.has_ports ? f.dport : 0, &v);
	if (!v.allowed)
		fail("a connection or datagram the policy denies reached slirp");
}

static void add(struct net_rules *rs, const char *rule)
{
	sbx_error_t err = NULL;
	if (net_rules_add(rs, rule, &err) < 0)
		fail(sbx_error_msg(err));
}

static void init(void)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) < 0 || fcntl(sv[1], F_SETFL, O_NONBLOCK) < 0)
		fail("socketpair");
	H.frames_fd = sv[0];
	guest_fd = sv[1];
	H.sandbox = "fuzz";
	H.beacon_fd = -1;
	H.pins = &pins;
	H.policy.gateway = NET_ADDR_GATEWAY;
	H.policy.host_ports[0] = 8000;
	H.policy.n_host_ports = 1;
	add(&H.policy.allow, "203.0.113.0/24");
	add(&H.policy.allow, "192.0.2.7:80"); /* inside an always-denied range */
	add(&H.policy.allow, "*.test");
	add(&H.policy.deny, "203.0.113.128/25");
	add(&H.policy.deny, "bad.test");
	add(&H.policy.sb_deny, "203.0.113.9:22");
}

/* Reads what the guest was answered, flushing the queue behind it. */
static void check_answers(void)
{
	static uint8_t buf[65536];
	do {
		ssize_t n;
		while ((n = recv(guest_fd, buf, sizeof(buf), 0)) >= 0) {
			struct net_frame f;
			if (net_frame_parse(buf, (size_t)n, &f) < 0 || !f.is_ipv4 || f.dst != NET_ADDR_GUEST ||
			    f.src != input_dst)
				fail("an answer to the guest that does not parse or is misaddressed");
		}
	} while (net_txq_flush(&H));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (guest_fd < 0)
		init();
	struct net_frame f;
	input_dst = net_frame_parse(data, size, &f) == 0 ? f.dst : 0;
	net_guard_input(&H, data, size);
	check_answers();
	return 0;
}
