/* Egress rules and verdicts (see net_policy.h). */
#include "net/net_policy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/scodes.h"
#include "proto/proto_net_addr.h"
#include "net/net_frame.h"

struct range {
	uint32_t addr;
	uint8_t prefix;
	const char *text;
};

/* Private, shared, link-local and special-purpose space (RFC 6890): no
 * destination a guest has business with unless the operator names it. */
static const struct range always_denied[] = {
	{ 0x00000000, 8, "0.0.0.0/8" },	       { 0x0a000000, 8, "10.0.0.0/8" },
	{ 0x64400000, 10, "100.64.0.0/10" },   { 0x7f000000, 8, "127.0.0.0/8" },
	{ 0xa9fe0000, 16, "169.254.0.0/16" },  { 0xac100000, 12, "172.16.0.0/12" },
	{ 0xc0000000, 24, "192.0.0.0/24" },    { 0xc0000200, 24, "192.0.2.0/24" },
	{ 0xc0a80000, 16, "192.168.0.0/16" },  { 0xc6120000, 15, "198.18.0.0/15" },
	{ 0xc6336400, 24, "198.51.100.0/24" }, { 0xcb007100, 24, "203.0.113.0/24" },
	{ 0xe0000000, 4, "224.0.0.0/4" },      { 0xf0000000, 4, "240.0.0.0/4" },
	{ 0xffffffff, 32, "255.255.255.255" },
};

static uint32_t prefix_mask(unsigned prefix)
{
	return prefix == 0 ? 0 : 0xffffffffu << (32 - prefix);
}

int net_name_normalize(char *name)
{
	size_t n = strlen(name);
	if (n > 0 && name[n - 1] == '.')
		name[--n] = '\0';
	if (n == 0 || n > NET_NAME_MAX)
		return -1;
	size_t label = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];
		if (c == '.') {
			if (label == 0 || name[i - 1] == '-')
				return -1;
			label = 0;
			continue;
		}
		if (!isalnum(c) && c != '-' && c != '_')
			return -1;
		if (c == '-' && label == 0)
			return -1; /* nor may a label start or end with a hyphen */
		name[i] = (char)tolower(c);
		if (++label > 63)
			return -1;
	}
	return label == 0 || name[n - 1] == '-' ? -1 : 0;
}

static int parse_port(const char *s, uint16_t *port)
{
	if (*s == '\0' || strlen(s) > 5)
		return -1;
	unsigned long v = 0;
	for (const char *p = s; *p != '\0'; p++) {
		if (!isdigit((unsigned char)*p))
			return -1;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v == 0 || v > 65535)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

static int parse_cidr(const char *s, struct net_rule *r)
{
	char buf[32];
	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	unsigned prefix = 32;
	char *slash = strchr(buf, '/');
	if (slash != NULL) {
		*slash = '\0';
		const char *p = slash + 1;
		if (*p == '\0' || strlen(p) > 2)
			return -1;
		prefix = 0;
		for (; *p != '\0'; p++) {
			if (!isdigit((unsigned char)*p))
				return -1;
			prefix = prefix * 10 + (unsigned)(*p - '0');
		}
		if (prefix > 32)
			return -1;
	}
	struct in_addr a;
	if (inet_pton(AF_INET, buf, &a) != 1)
		return -1;
	r->addr = ntohl(a.s_addr);
	r->prefix = (uint8_t)prefix;
	r->mask = prefix_mask(prefix);
	return 0;
}

/* Splits "host:port"; only the last colon counts. */
static int split_port(char *s, uint16_t *port)
{
	*port = 0;
	char *colon = strrchr(s, ':');
	if (colon == NULL)
		return 0;
	*colon = '\0';
	return parse_port(colon + 1, port);
}

static int rule_parse(const char *text, struct net_rule *r, sbx_error_t *err)
{
	memset(r, 0, sizeof(*r));
	cleanup_free char *s = strdup(text);
	if (s == NULL || (r->text = strdup(text)) == NULL)
		return sbx_error_errno(err, ENOMEM, "rule");
	if (split_port(s, &r->port) < 0)
		return sbx_error_set(err, EINVAL, "rule '%s': bad port (1..65535)", text);
	if (isdigit((unsigned char)s[0]) && strspn(s, "0123456789./") == strlen(s)) {
		if (parse_cidr(s, r) < 0)
			return sbx_error_set(err, EINVAL, "rule '%s': not an IPv4 address or CIDR", text);
		if ((r->addr & ~r->mask) != 0)
			return sbx_error_set(err, EINVAL, "rule '%s': host bits set below /%u", text, r->prefix);
		return 0;
	}
	char *name = s;
	if (strncmp(name, "*.", 2) == 0) {
		r->wildcard = true;
		name += 2;
	}
	if (net_name_normalize(name) < 0)
		return sbx_error_set(err, EINVAL,
				     "rule '%s': not a CIDR, an IPv4 address or a DNS name (optionally \"*.\"-prefixed), "
				     "each with an optional :port",
				     text);
	r->is_name = true;
	if ((r->name = strdup(name)) == NULL)
		return sbx_error_errno(err, ENOMEM, "rule");
	return 0;
}

static void rule_free(struct net_rule *r)
{
	free(r->text);
	free(r->name);
}

int net_rules_add(struct net_rules *rs, const char *text, sbx_error_t *err)
{
	if (rs->n == NET_MAX_RULES)
		return sbx_error_set(err, E2BIG, "more than %d rules", NET_MAX_RULES);
	struct net_rule r;
	if (rule_parse(text, &r, err) < 0) {
		rule_free(&r);
		return -1;
	}
	struct net_rule *v = realloc(rs->v, (rs->n + 1) * sizeof(*v));
	if (v == NULL) {
		rule_free(&r);
		return sbx_error_errno(err, ENOMEM, "rules");
	}
	rs->v = v;
	rs->v[rs->n++] = r;
	return 0;
}

void net_rules_free(struct net_rules *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		rule_free(&rs->v[i]);
	free(rs->v);
	rs->v = NULL;
	rs->n = 0;
}

void net_policy_free(struct net_policy *p)
{
	free(p->host_addrs);
	p->host_addrs = NULL;
	p->n_host_addrs = 0;
	net_rules_free(&p->allow);
	net_rules_free(&p->deny);
	net_rules_free(&p->sb_allow);
	net_rules_free(&p->sb_deny);
}

static bool name_matches(const struct net_rule *r, const char *name)
{
	if (!r->wildcard)
		return strcmp(r->name, name) == 0;
	size_t n = strlen(name), m = strlen(r->name);
	return n > m + 1 && name[n - m - 1] == '.' && strcmp(name + n - m, r->name) == 0;
}

void net_pins_add(struct net_pins *pins, const char *name, uint32_t addr, uint32_t ttl_s, int64_t now_ms)
{
	struct net_pin *slot = NULL;
	for (size_t i = 0; i < pins->n && slot == NULL; i++) {
		struct net_pin *p = &pins->v[i];
		if (p->expires_ms <= now_ms || (p->addr == addr && strcmp(p->name, name) == 0))
			slot = p;
	}
	if (slot == NULL && pins->n < NET_MAX_PINS)
		slot = &pins->v[pins->n++];
	if (slot == NULL) {
		slot = &pins->v[0];
		for (size_t i = 1; i < pins->n; i++) {
			if (pins->v[i].expires_ms < slot->expires_ms)
				slot = &pins->v[i];
		}
	}
	if (strlen(name) > NET_NAME_MAX)
		return;
	strcpy(slot->name, name);
	slot->addr = addr;
	slot->expires_ms = now_ms + (int64_t)ttl_s * 1000;
}

static bool rule_matches(const struct net_rule *r, const struct net_pins *pins, int64_t now, uint32_t dst,
			 uint16_t port)
{
	if (r->port != 0 && r->port != port)
		return false;
	if (!r->is_name)
		return (dst & r->mask) == r->addr;
	for (size_t i = 0; pins != NULL && i < pins->n; i++) {
		const struct net_pin *p = &pins->v[i];
		if (p->addr == dst && p->expires_ms > now && name_matches(r, p->name))
			return true;
	}
	return false;
}

static const struct net_rule *first_match(const struct net_rules *rs, const struct net_pins *pins, int64_t now,
					  uint32_t dst, uint16_t port)
{
	for (size_t i = 0; i < rs->n; i++) {
		if (rule_matches(&rs->v[i], pins, now, dst, port))
			return &rs->v[i];
	}
	return NULL;
}

static const struct range *denied_range(uint32_t a)
{
	for (size_t i = 0; i < sizeof(always_denied) / sizeof(always_denied[0]); i++) {
		if ((a & prefix_mask(always_denied[i].prefix)) == always_denied[i].addr)
			return &always_denied[i];
	}
	return NULL;
}

/* A configured allow CIDR lying inside the range and matching. */
static bool explicitly_allowed(const struct net_policy *p, const struct range *rg, uint32_t dst, uint16_t port,
			       bool any_port)
{
	for (size_t i = 0; i < p->allow.n; i++) {
		const struct net_rule *r = &p->allow.v[i];
		if (r->is_name || r->prefix < rg->prefix || (r->addr & prefix_mask(rg->prefix)) != rg->addr)
			continue;
		if ((dst & r->mask) == r->addr && (any_port || r->port == 0 || r->port == port))
			return true;
	}
	return false;
}

static void deny(struct net_verdict *v, enum net_deny_reason reason, const char *prefix, const char *what)
{
	v->allowed = false;
	v->reason = reason;
	snprintf(v->why, sizeof(v->why), "%s%s", prefix, what);
}

bool net_policy_is_host(const struct net_policy *p, uint32_t a)
{
	/* Old libslirp maps every alias of its /24 to host loopback, every
	 * version maps 255.255.255.255 there, and the host's stack takes
	 * 0.0.0.0 and 127/8 as itself. */
	if ((a & prefix_mask(NET_ADDR_PREFIX)) == (p->gateway & prefix_mask(NET_ADDR_PREFIX)) || a == 0 ||
	    a == 0xffffffffu || (a >> 24) == 127)
		return true;
	for (size_t i = 0; i < p->n_host_addrs; i++) {
		if (p->host_addrs[i] == a)
			return true;
	}
	return false;
}

static void judge_host(const struct net_policy *p, uint32_t dst, uint8_t proto, uint16_t port,
		       struct net_verdict *v)
{
	if (proto == NET_PROTO_ICMP) {
		/* the helper's stack answers the gateway itself; slirp would ping
		 * any other address for real */
		if (dst != p->gateway)
			deny(v, NET_DENY_HOST_PORT, "", "the host's own address (ICMP)");
		return;
	}
	for (size_t i = 0; i < p->n_host_ports; i++) {
		if ((proto == NET_PROTO_TCP || proto == NET_PROTO_UDP) && p->host_ports[i] == port)
			return;
	}
	deny(v, NET_DENY_HOST_PORT, dst == p->gateway ? "gateway" : "the host's own address:",
	     " port not in network_policy.host_ports");
}

void net_policy_judge(const struct net_policy *p, const struct net_pins *pins, int64_t now_ms, uint32_t dst,
		      uint8_t proto, uint16_t port, struct net_verdict *v)
{
	v->allowed = true;
	v->reason = NET_DENY_N;
	v->why[0] = '\0';
	if (net_policy_is_host(p, dst)) {
		judge_host(p, dst, proto, port, v);
		return;
	}
	const struct net_rule *r;
	if ((r = first_match(&p->deny, pins, now_ms, dst, port)) != NULL ||
	    (r = first_match(&p->sb_deny, pins, now_ms, dst, port)) != NULL) {
		deny(v, NET_DENY_DENY_RULE, "deny rule ", r->text);
		return;
	}
	const struct range *rg = denied_range(dst);
	if (rg != NULL && !explicitly_allowed(p, rg, dst, port, false)) {
		deny(v, NET_DENY_DENIED_RANGE, "always-denied range ", rg->text);
		return;
	}
	if (p->allow.n > 0 && first_match(&p->allow, pins, now_ms, dst, port) == NULL) {
		deny(v, NET_DENY_NOT_ALLOWED, "", "no network_policy.allow rule matches");
		return;
	}
	if (p->sb_allow.n > 0 && first_match(&p->sb_allow, pins, now_ms, dst, port) == NULL)
		deny(v, NET_DENY_NOT_ALLOWED, "", "no rule of the sandbox's allow list matches");
}

static const struct net_rule *name_rule(const struct net_rules *rs, const char *name)
{
	for (size_t i = 0; i < rs->n; i++) {
		if (rs->v[i].is_name && name_matches(&rs->v[i], name))
			return &rs->v[i];
	}
	return NULL;
}

void net_policy_judge_name(const struct net_policy *p, const char *name, struct net_verdict *v)
{
	v->allowed = true;
	v->reason = NET_DENY_N;
	v->why[0] = '\0';
	const struct net_rule *r;
	if ((r = name_rule(&p->deny, name)) != NULL || (r = name_rule(&p->sb_deny, name)) != NULL)
		deny(v, NET_DENY_DNS_NAME, "deny rule ", r->text);
	else if (p->allow.n > 0 && name_rule(&p->allow, name) == NULL)
		deny(v, NET_DENY_DNS_NAME, "", "no network_policy.allow name rule matches");
	else if (p->sb_allow.n > 0 && name_rule(&p->sb_allow, name) == NULL)
		deny(v, NET_DENY_DNS_NAME, "", "no name rule of the sandbox's allow list matches");
}

bool net_policy_rebinding(const struct net_policy *p, uint32_t addr)
{
	if (net_policy_is_host(p, addr))
		return true;
	const struct range *rg = denied_range(addr);
	return rg != NULL && !explicitly_allowed(p, rg, addr, 0, true);
}

static bool covers(const struct net_rule *c, const struct net_rule *r)
{
	if (c->port != 0 && c->port != r->port)
		return false;
	if (c->is_name != r->is_name)
		return false;
	if (!c->is_name)
		return c->prefix <= r->prefix && (r->addr & c->mask) == c->addr;
	if (!c->wildcard)
		return !r->wildcard && strcmp(c->name, r->name) == 0;
	/* *.a covers *.a, b.a and *.b.a */
	return name_matches(c, r->name) || (r->wildcard && strcmp(c->name, r->name) == 0);
}

int net_policy_check_narrowing(const struct net_policy *configured, const struct net_rule *r, sbx_error_t *err)
{
	if (configured->allow.n > 0) {
		for (size_t i = 0; i < configured->allow.n; i++) {
			if (covers(&configured->allow.v[i], r))
				return 0;
		}
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST,
				       "network.allow rule '%s' is wider than the configured network_policy.allow: a "
				       "sandbox may only narrow the policy",
				       r->text);
	}
	if (!r->is_name) {
		const struct range *rg = denied_range(r->addr);
		if (rg != NULL && r->prefix >= rg->prefix)
			return sbx_error_scode(err, SBX_S_INVALID_REQUEST,
					       "network.allow rule '%s' names the always-denied range %s, which only "
					       "the configured network_policy.allow can open",
					       r->text, rg->text);
	}
	return 0;
}
