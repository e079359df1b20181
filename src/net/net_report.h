/* The network helper's denials by reason, and the report that carries
 * their counts to the daemon (docs/metrics.md,
 * sandbox_libkrun_network_denials_total).
 *
 * The reasons are a fixed set: the metric's label values are their names,
 * never an address or a name the guest chose.
 *
 * The report is one SOCK_SEQPACKET message on the lifeline socket
 * (proto/proto_net_addr.h), helper to daemon, NET_REPORT_LEN bytes:
 *
 *   byte 0      NET_REPORT_VERSION
 *   byte 1      NET_DENY_N, the number of counts that follow
 *   bytes 2-7   zero
 *   then        NET_DENY_N little-endian uint64: each reason's count since
 *               the helper started, in enum order
 *
 * Counts are cumulative, so a report lost or read late costs nothing but
 * freshness: the next one carries every denial before it.  The helper is
 * jailed but runs the guest's TCP/IP peer, so the daemon treats a report
 * as hostile: exact length and header, every count at most
 * NET_REPORT_MAX_COUNT and none lower than the last accepted
 * (net_report_accept). */
#ifndef SBX_NET_REPORT_H
#define SBX_NET_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

enum net_deny_reason {
	NET_DENY_HOST_PORT,     /* the host (gateway, its addresses) off host_ports; ICMP to it */
	NET_DENY_DENY_RULE,     /* a deny rule, configured or the sandbox's */
	NET_DENY_DENIED_RANGE,  /* an always-denied range */
	NET_DENY_NOT_ALLOWED,   /* no allow rule (configured or the sandbox's) matches */
	NET_DENY_DNS_PORT,      /* the DNS address on anything but UDP 53 */
	NET_DENY_DNS_NAME,      /* a query for a name the policy denies (REFUSED) */
	NET_DENY_DNS_REBINDING, /* an answer into the host or an always-denied range dropped */
	NET_DENY_DNS_BUSY,      /* a query past NET_RESOLVER_MAX_PENDING (SERVFAIL) */
	NET_DENY_MALFORMED,     /* a frame whose headers do not fit or lie */
	NET_DENY_NOT_IPV4,      /* IPv6, other ethertypes, IP protocols but TCP, UDP, ICMP */
	NET_DENY_FRAGMENT,      /* an IPv4 fragment */
	NET_DENY_SPOOFED,       /* a source address other than the guest's */
	NET_DENY_N
};

#define NET_REPORT_VERSION 1
#define NET_REPORT_HEADER 8
#define NET_REPORT_LEN (NET_REPORT_HEADER + 8 * NET_DENY_N)
/* 2^40: a million denials a second for twelve days; a helper's count stops
 * there, and a report above it is refused. */
#define NET_REPORT_MAX_COUNT (UINT64_C(1) << 40)

struct net_report {
	uint64_t denied[NET_DENY_N];
};

/* The label value of a reason ("host_port" ...); NULL out of range. */
const char *net_deny_reason_name(enum net_deny_reason r);

/* Writes r's message into out (NET_REPORT_LEN bytes), counts cut to
 * NET_REPORT_MAX_COUNT. */
void net_report_encode(const struct net_report *r, uint8_t out[NET_REPORT_LEN]);

/* Checks one message (len bytes as received) against *seen, the counts
 * last accepted from the same helper: on success *delta holds what it
 * adds and *seen its counts.  -1 (nothing changed) for a wrong length,
 * version, count or padding, a count above NET_REPORT_MAX_COUNT, or one
 * below *seen's. */
int net_report_accept(struct net_report *seen, const uint8_t *msg, size_t len, struct net_report *delta,
		      sbx_error_t *err);

#endif
