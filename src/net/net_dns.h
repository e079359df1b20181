/* The DNS messages the helper reads (the guest's queries: hostile bytes)
 * and writes (its answers, at most NET_DNS_MAX bytes, A records only). */
#ifndef SBX_NET_DNS_H
#define SBX_NET_DNS_H

#include <stddef.h>
#include <stdint.h>

#include "net/net_policy.h"

#define NET_DNS_MAX 512
#define NET_DNS_MAX_ADDRS 16
#define NET_DNS_TYPE_A 1
#define NET_DNS_CLASS_IN 1

enum net_dns_rcode {
	NET_DNS_NOERROR = 0,
	NET_DNS_FORMERR = 1,
	NET_DNS_SERVFAIL = 2,
	NET_DNS_NXDOMAIN = 3,
	NET_DNS_NOTIMP = 4,
	NET_DNS_REFUSED = 5,
};

struct net_dns_query {
	uint16_t id;
	uint16_t flags;
	uint8_t opcode;
	char name[NET_NAME_MAX + 1]; /* as sent, labels joined by '.' ("" = root) */
	uint16_t qtype, qclass;
	uint8_t question[NET_NAME_MAX + 2 + 4]; /* the raw question, echoed back */
	size_t question_len;
};

/* 0 for a query with one question, -1 for anything else (drop it). */
int net_dns_parse_query(const uint8_t *p, size_t len, struct net_dns_query *q);
/* The answer: rcode, and for NOERROR the addresses (host byte order) with
 * their TTLs as A records of the question's name.  Returns the length. */
size_t net_dns_build_reply(const struct net_dns_query *q, enum net_dns_rcode rcode, const uint32_t *addrs,
			   const uint32_t *ttls, size_t naddrs, uint8_t out[NET_DNS_MAX]);

#endif
