/* Every frame between the guest and slirp passes here: the egress policy,
 * the helper's own DNS server, and the activity beacon. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "common/clock.h"
#include "common/log_limit.h"
#include "proto/proto_net_addr.h"
#include "net/net_helper.h"
#include "net/net_hostaddr.h"

#define BEACON_EVERY_MS 1000

void net_beacon(struct net_helper *h)
{
	int64_t now = sbx_now_ms();
	if (h->beacon_fd < 0 || now - h->beacon_at_ms < BEACON_EVERY_MS)
		return;
	h->beacon_at_ms = now;
	if (futimens(h->beacon_fd, NULL) < 0)
		sbx_debug_limited("net: beacon: %s", strerror(errno));
}

int net_host_addrs_refresh(struct net_helper *h, sbx_error_t *err)
{
	int64_t now = sbx_now_ms();
	if (h->policy.host_addrs != NULL && now - h->host_addrs_at_ms < NET_HOST_ADDRS_EVERY_MS)
		return 0;
	uint32_t *v;
	size_t n;
	if (net_host_addrs_read(&v, &n, err) < 0)
		return -1;
	free(h->policy.host_addrs);
	h->policy.host_addrs = v;
	h->policy.n_host_addrs = n;
	h->host_addrs_at_ms = now;
	return 0;
}

static const char *proto_name(uint8_t proto)
{
	return proto == NET_PROTO_TCP ? "tcp" : proto == NET_PROTO_UDP ? "udp" : "icmp";
}

static void refuse(struct net_helper *h, const struct net_frame *f, enum net_deny_reason reason, const char *why)
{
	char what[64];
	uint32_t d = f->dst;
	if (f->proto == NET_PROTO_ICMP)
		snprintf(what, sizeof(what), "icmp %u.%u.%u.%u", d >> 24, (d >> 16) & 255, (d >> 8) & 255, d & 255);
	else
		snprintf(what, sizeof(what), "%s %u.%u.%u.%u:%u", proto_name(f->proto), d >> 24, (d >> 16) & 255,
			 (d >> 8) & 255, d & 255, f->dport);
	net_denial(h, reason, what, (uint64_t)f->proto << 48 | (uint64_t)f->dport << 32 | d, why);
	/* never an ICMP error about an ICMP error (RFC 1122) */
	if (f->proto == NET_PROTO_ICMP && f->icmp_type != NET_ICMP_ECHO)
		return;
	uint8_t out[NET_ETH_HLEN + 20 + 8 + 60 + 8];
	size_t n = f->proto == NET_PROTO_TCP ? net_frame_tcp_rst(f, out, sizeof(out))
					     : net_frame_icmp_unreach(f, NET_ICMP_UNREACH_FILTERED, out, sizeof(out));
	if (n > 0)
		net_send_guest(h, out, n);
}

/* Traffic to the helper's own DNS address: UDP 53 is answered here,
 * anything else refused. */
static void to_dns_address(struct net_helper *h, const struct net_frame *f)
{
	if (f->proto == NET_PROTO_UDP && f->dport == 53) {
		net_beacon(h);
		net_resolver_query(h, f);
	} else if (f->proto == NET_PROTO_TCP || f->proto == NET_PROTO_UDP) {
		refuse(h, f, NET_DENY_DNS_PORT, "the DNS address answers UDP port 53 only");
	} else {
		net_denial_count(h, NET_DENY_DNS_PORT);
	}
}

void net_guard_input(struct net_helper *h, const uint8_t *buf, size_t len)
{
	struct net_frame f;
	if (net_frame_parse(buf, len, &f) < 0) {
		net_denial_count(h, NET_DENY_MALFORMED);
		return;
	}
	if (f.ethertype == NET_ETHERTYPE_ARP) {
		/* whole: older libslirp releases read the header unchecked */
		if (len >= NET_ETH_HLEN + NET_ARP_HLEN)
			slirp_input(h->slirp, buf, (int)len);
		else
			net_denial_count(h, NET_DENY_MALFORMED);
		return;
	}
	/* IPv6 and everything else would bypass the rules; fragments carry no
	 * ports to judge (and slirp's reassembly is where its CVEs were). */
	if (!f.is_ipv4 || f.fragment || f.src != NET_ADDR_GUEST) {
		net_denial_count(h, !f.is_ipv4 ? NET_DENY_NOT_IPV4 : f.fragment ? NET_DENY_FRAGMENT : NET_DENY_SPOOFED);
		return;
	}
	if (f.dst == NET_ADDR_DNS) {
		to_dns_address(h, &f);
		return;
	}
	bool judge;
	switch (f.proto) {
	case NET_PROTO_TCP:
		/* a new connection; slirp resets segments of flows it has not */
		judge = (f.tcp_flags & (NET_TCP_SYN | NET_TCP_ACK)) == NET_TCP_SYN;
		break;
	case NET_PROTO_UDP:
		judge = true;
		break;
	case NET_PROTO_ICMP:
		judge = true;
		break;
	default:
		net_denial_count(h, NET_DENY_NOT_IPV4);
		return;
	}
	if (judge) {
		sbx_error_t err = NULL;
		if (net_host_addrs_refresh(h, &err) < 0) {
			sbx_warn_limited("net: sandbox %s: %s (the last list stays)", h->sandbox, sbx_error_msg(err));
			sbx_error_free(&err);
		}
		struct net_verdict v;
		net_policy_judge(&h->policy, h->pins, sbx_now_ms(), f.dst, f.proto, f.has_ports ? f.dport : 0, &v);
		if (!v.allowed) {
			refuse(h, &f, v.reason, v.why);
			return;
		}
	}
	if (f.proto == NET_PROTO_UDP || f.payload_len > 0)
		net_beacon(h);
	slirp_input(h->slirp, buf, (int)len);
}

void net_guard_output(struct net_helper *h, const uint8_t *buf, size_t len)
{
	struct net_frame f;
	if (net_frame_parse(buf, len, &f) == 0 && f.is_ipv4 && !f.fragment &&
	    (f.proto == NET_PROTO_UDP || (f.proto == NET_PROTO_TCP && f.payload_len > 0)))
		net_beacon(h);
	net_send_guest(h, buf, len);
}
