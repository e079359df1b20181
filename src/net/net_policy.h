/* The egress policy of a networked sandbox: rules, the always-denied
 * ranges, the gateway's host ports, and the name pins DNS answers leave.
 *
 * A rule is a CIDR or IPv4 address, or a DNS name with an optional leading
 * "*." (any subdomain, not the apex), each with an optional ":port".
 * Verdicts: the host (the gateway, slirp's whole /24, loopback, 0.0.0.0,
 * 255.255.255.255 and every address of the host's interfaces) is reachable
 * only on host_ports; deny rules
 * (configured and the sandbox's) always win; the always-denied ranges stay
 * closed unless a configured allow CIDR inside the range names the
 * address; a non-empty allow list (configured, and the sandbox's) must
 * match.  A name rule matches an address the sandbox itself resolved
 * through the helper (a pin, kept for the answer's TTL). */
#ifndef SBX_NET_POLICY_H
#define SBX_NET_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "net/net_report.h"

#define NET_NAME_MAX 253
#define NET_MAX_RULES 1024
#define NET_MAX_HOST_PORTS 64
#define NET_MAX_PINS 4096

struct net_rule {
	char *text;          /* as written: log lines and errors name it */
	bool is_name;
	uint32_t addr, mask; /* host byte order */
	uint8_t prefix;
	uint16_t port;       /* 0 = every port */
	char *name;          /* lower case, without "*." nor a final dot */
	bool wildcard;
};

struct net_rules {
	struct net_rule *v;
	size_t n;
};

int net_rules_add(struct net_rules *rs, const char *text, sbx_error_t *err);
void net_rules_free(struct net_rules *rs);

struct net_policy {
	struct net_rules allow, deny;       /* configured (network_policy) */
	struct net_rules sb_allow, sb_deny; /* the sandbox's narrowing */
	uint16_t host_ports[NET_MAX_HOST_PORTS];
	size_t n_host_ports;
	uint32_t gateway; /* host byte order */
	uint32_t *host_addrs; /* the host's interfaces' addresses (owned) */
	size_t n_host_addrs;
};

void net_policy_free(struct net_policy *p);

struct net_pin {
	char name[NET_NAME_MAX + 1];
	uint32_t addr;
	int64_t expires_ms;
};

struct net_pins {
	struct net_pin v[NET_MAX_PINS];
	size_t n;
};

/* Pins name -> addr until now + ttl (a full table drops the pin closest
 * to expiry). */
void net_pins_add(struct net_pins *pins, const char *name, uint32_t addr, uint32_t ttl_s, int64_t now_ms);

struct net_verdict {
	bool allowed;
	enum net_deny_reason reason; /* a denial's kind (the metric's label) */
	char why[160]; /* the rule or range that decided a denial */
};

/* proto is NET_PROTO_*; port 0 for ICMP.  pins may be NULL. */
void net_policy_judge(const struct net_policy *p, const struct net_pins *pins, int64_t now_ms, uint32_t dst,
		      uint8_t proto, uint16_t port, struct net_verdict *v);
/* True when a connection to a reaches the host itself. */
bool net_policy_is_host(const struct net_policy *p, uint32_t a);
/* May the sandbox resolve this name (lower case, no final dot)? */
void net_policy_judge_name(const struct net_policy *p, const char *name, struct net_verdict *v);
/* True when a DNS answer pointing at addr is rebinding: the address is the
 * host's, or in an always-denied range no configured allow rule names. */
bool net_policy_rebinding(const struct net_policy *p, uint32_t addr);
/* Fails (S001, naming the rule) when a sandbox's allow rule would reach
 * what the configured policy does not. */
int net_policy_check_narrowing(const struct net_policy *configured, const struct net_rule *r, sbx_error_t *err);

/* Normalises a DNS name in place (lower case, final dot dropped); -1 when
 * it is not a valid host name. */
int net_name_normalize(char *name);

#endif
