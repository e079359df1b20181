/* Egress verdicts: gateway ports, deny over allow, the always-denied
 * ranges and their explicit exceptions, name rules through pins, the
 * sandbox's narrowing and what counts as widening. */
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "proto/proto_net_addr.h"
#include "net/net_frame.h"
#include "net/net_hostaddr.h"
#include "net/net_policy.h"

static uint32_t ip(unsigned a, unsigned b, unsigned c, unsigned d)
{
	return a << 24 | b << 16 | c << 8 | d;
}

static int add(struct net_rules *rs, const char *text)
{
	sbx_error_t err = NULL;
	int rc = net_rules_add(rs, text, &err);
	sbx_error_free(&err);
	return rc;
}

static bool allowed(const struct net_policy *p, const struct net_pins *pins, uint32_t dst, uint16_t port,
		    const char *why)
{
	struct net_verdict v;
	net_policy_judge(p, pins, 1000, dst, NET_PROTO_TCP, port, &v);
	if (why != NULL && strcmp(v.why, why) != 0)
		return !v.allowed; /* a wrong reason fails the caller's CHECK either way */
	return v.allowed;
}

TEST(rules_parse_and_reject)
{
	struct net_rules rs = { 0 };
	CHECK_INT(add(&rs, "203.0.113.0/24"), 0);
	CHECK_INT(add(&rs, "198.51.100.7:443"), 0);
	CHECK_INT(add(&rs, "10.0.0.0/8:22"), 0);
	CHECK_INT(add(&rs, "PyPI.org."), 0);
	CHECK_INT(add(&rs, "*.pythonhosted.org"), 0);
	CHECK_INT(add(&rs, "example.com:8443"), 0);
	CHECK_INT(rs.n, 6);
	CHECK(rs.v[1].port == 443 && rs.v[1].prefix == 32);
	CHECK_STR(rs.v[3].name, "pypi.org");
	CHECK(rs.v[4].wildcard);
	CHECK_STR(rs.v[4].name, "pythonhosted.org");
	const char *bad[] = { "", "10.0.0.1/8", "10.0.0.0/33", "1.2.3.4:0", "1.2.3.4:70000", "1.2.3", "a..b", "*.",
			      "bad name", "-", "300.1.1.1", "*.*.x", NULL };
	for (int i = 0; bad[i] != NULL; i++) {
		if (add(&rs, bad[i]) == 0)
			sbx_test_fail(__FILE__, __LINE__, "rule '%s' accepted", bad[i]);
	}
	CHECK_INT(rs.n, 6);
	net_rules_free(&rs);
}

TEST(gateway_only_on_host_ports)
{
	struct net_policy p = { .gateway = NET_ADDR_GATEWAY, .host_ports = { 8000 }, .n_host_ports = 1 };
	CHECK(allowed(&p, NULL, NET_ADDR_GATEWAY, 8000, NULL));
	CHECK(!allowed(&p, NULL, NET_ADDR_GATEWAY, 22, "gateway port not in network_policy.host_ports"));
	/* an allow rule naming the gateway does not open other ports */
	add(&p.allow, "10.0.2.2");
	CHECK(!allowed(&p, NULL, NET_ADDR_GATEWAY, 22, NULL));
	net_policy_free(&p);
}

static bool judged(const struct net_policy *p, uint32_t dst, uint8_t proto, uint16_t port, const char *why)
{
	struct net_verdict v;
	net_policy_judge(p, NULL, 1000, dst, proto, port, &v);
	if (why != NULL && strcmp(v.why, why) != 0)
		sbx_test_fail(__FILE__, __LINE__, "why '%s', not '%s'", v.why, why);
	return v.allowed;
}

TEST(the_hosts_own_addresses_are_the_gateway)
{
	uint32_t addrs[] = { ip(192, 0, 2, 2), ip(93, 184, 216, 34) };
	struct net_policy p = { .gateway = NET_ADDR_GATEWAY, .host_ports = { 2222 }, .n_host_ports = 1 };
	p.host_addrs = malloc(sizeof(addrs));
	memcpy(p.host_addrs, addrs, sizeof(addrs));
	p.n_host_addrs = 2;
	const char *host = "the host's own address: port not in network_policy.host_ports";
	for (size_t i = 0; i < 2; i++) {
		CHECK(judged(&p, addrs[i], NET_PROTO_TCP, 2222, ""));
		CHECK(judged(&p, addrs[i], NET_PROTO_UDP, 2222, ""));
		CHECK(!judged(&p, addrs[i], NET_PROTO_TCP, 22, host));
		CHECK(!judged(&p, addrs[i], NET_PROTO_ICMP, 0, "the host's own address (ICMP)"));
		CHECK(net_policy_rebinding(&p, addrs[i]));
	}
	/* neither an allow rule naming the address nor one for everything opens it */
	add(&p.allow, "93.184.216.34");
	add(&p.allow, "0.0.0.0/0");
	CHECK(!judged(&p, ip(93, 184, 216, 34), NET_PROTO_TCP, 22, host));
	CHECK(judged(&p, ip(93, 184, 216, 35), NET_PROTO_TCP, 22, ""));
	/* slirp's whole /24, loopback, 0.0.0.0 and the broadcast address reach
	 * the host whatever libslirp's version */
	uint32_t aliases[] = { ip(10, 0, 2, 1), ip(10, 0, 2, 99), ip(10, 0, 2, 255), ip(127, 0, 0, 1), ip(127, 1, 2, 3),
			       ip(0, 0, 0, 0), ip(255, 255, 255, 255) };
	add(&p.allow, "10.0.2.0/24");
	add(&p.allow, "127.0.0.0/8");
	add(&p.allow, "255.255.255.255");
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++) {
		CHECK(judged(&p, aliases[i], NET_PROTO_TCP, 2222, ""));
		CHECK(!judged(&p, aliases[i], NET_PROTO_TCP, 22, host));
		CHECK(!judged(&p, aliases[i], NET_PROTO_UDP, 53, host));
		CHECK(!judged(&p, aliases[i], NET_PROTO_ICMP, 0, "the host's own address (ICMP)"));
	}
	/* the gateway itself answers ping */
	CHECK(judged(&p, NET_ADDR_GATEWAY, NET_PROTO_ICMP, 0, ""));
	CHECK(!judged(&p, NET_ADDR_GATEWAY, NET_PROTO_TCP, 22, "gateway port not in network_policy.host_ports"));
	net_policy_free(&p);
	CHECK(p.host_addrs == NULL && p.n_host_addrs == 0);
}

TEST(the_host_addresses_read_include_loopback)
{
	uint32_t *v = NULL;
	size_t n = 0;
	sbx_error_t err = NULL;
	CHECK_INT(net_host_addrs_read(&v, &n, &err), 0);
	bool lo = false;
	for (size_t i = 0; i < n; i++) {
		lo = lo || v[i] == ip(127, 0, 0, 1);
		for (size_t j = 0; j < i; j++)
			CHECK(v[i] != v[j]);
	}
	CHECK(lo);
	free(v);
	sbx_error_free(&err);
}

TEST(special_purpose_ranges_are_denied_unless_named)
{
	struct net_policy p = { .gateway = NET_ADDR_GATEWAY };
	const struct {
		uint32_t a;
		const char *range;
	} special[] = {
		{ ip(192, 0, 0, 9), "192.0.0.0/24" },	 { ip(192, 0, 2, 1), "192.0.2.0/24" },
		{ ip(198, 18, 0, 1), "198.18.0.0/15" },	 { ip(198, 19, 255, 1), "198.18.0.0/15" },
		{ ip(198, 51, 100, 7), "198.51.100.0/24" }, { ip(203, 0, 113, 5), "203.0.113.0/24" },
		{ ip(240, 1, 2, 3), "240.0.0.0/4" },	 { ip(224, 0, 0, 251), "224.0.0.0/4" },
		{ ip(239, 255, 255, 250), "224.0.0.0/4" },
	};
	char why[64];
	for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++) {
		snprintf(why, sizeof(why), "always-denied range %s", special[i].range);
		CHECK(!judged(&p, special[i].a, NET_PROTO_TCP, 80, why));
		CHECK(!judged(&p, special[i].a, NET_PROTO_UDP, 5353, why));
		CHECK(net_policy_rebinding(&p, special[i].a));
	}
	/* their neighbours are ordinary */
	CHECK(judged(&p, ip(192, 0, 1, 1), NET_PROTO_TCP, 80, ""));
	CHECK(judged(&p, ip(198, 20, 0, 1), NET_PROTO_TCP, 80, ""));
	CHECK(judged(&p, ip(203, 0, 114, 1), NET_PROTO_TCP, 80, ""));
	/* a configured allow inside one names it */
	add(&p.allow, "203.0.113.0/24");
	CHECK(judged(&p, ip(203, 0, 113, 5), NET_PROTO_TCP, 80, ""));
	CHECK(!net_policy_rebinding(&p, ip(203, 0, 113, 5)));
	net_policy_free(&p);
}

TEST(always_denied_ranges_and_explicit_exceptions)
{
	struct net_policy p = { .gateway = NET_ADDR_GATEWAY };
	uint32_t denied[] = { ip(0, 1, 2, 3), ip(10, 0, 0, 1), ip(100, 64, 0, 1), ip(127, 0, 0, 1), ip(169, 254, 169, 254),
			      ip(172, 16, 0, 1), ip(172, 31, 255, 255), ip(192, 168, 1, 1), ip(224, 0, 0, 1),
			      ip(240, 0, 0, 1), ip(255, 255, 255, 255) };
	for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]); i++)
		CHECK(!allowed(&p, NULL, denied[i], 80, NULL));
	CHECK(allowed(&p, NULL, ip(172, 32, 0, 1), 80, NULL));
	CHECK(allowed(&p, NULL, ip(8, 8, 8, 8), 53, NULL));
	CHECK(!allowed(&p, NULL, ip(169, 254, 169, 254), 80, "always-denied range 169.254.0.0/16"));
	/* a configured allow inside the range opens exactly that */
	add(&p.allow, "10.1.0.0/16:5432");
	CHECK(allowed(&p, NULL, ip(10, 1, 2, 3), 5432, NULL));
	CHECK(!allowed(&p, NULL, ip(10, 1, 2, 3), 22, NULL));
	CHECK(!allowed(&p, NULL, ip(10, 2, 0, 1), 5432, NULL));
	/* a rule wider than the range does not name it */
	add(&p.allow, "0.0.0.0/0");
	CHECK(!allowed(&p, NULL, ip(192, 168, 0, 1), 80, "always-denied range 192.168.0.0/16"));
	CHECK(allowed(&p, NULL, ip(8, 8, 8, 8), 80, NULL));
	/* nor does the sandbox's own allow list */
	add(&p.sb_allow, "192.168.0.1");
	CHECK(!allowed(&p, NULL, ip(192, 168, 0, 1), 80, NULL));
	CHECK(net_policy_rebinding(&p, ip(127, 0, 0, 1)));
	CHECK(!net_policy_rebinding(&p, ip(10, 1, 9, 9)));
	CHECK(!net_policy_rebinding(&p, ip(93, 184, 216, 34)));
	CHECK(net_policy_rebinding(&p, ip(203, 0, 113, 1)));
	net_policy_free(&p);
}

TEST(deny_wins_and_allow_lists_must_match)
{
	struct net_policy p = { .gateway = NET_ADDR_GATEWAY };
	add(&p.allow, "203.0.113.0/24");
	add(&p.allow, "93.184.216.7:443");
	add(&p.deny, "203.0.113.128/25");
	CHECK(allowed(&p, NULL, ip(203, 0, 113, 1), 80, NULL));
	CHECK(!allowed(&p, NULL, ip(203, 0, 113, 200), 80, "deny rule 203.0.113.128/25"));
	CHECK(allowed(&p, NULL, ip(93, 184, 216, 7), 443, NULL));
	CHECK(!allowed(&p, NULL, ip(93, 184, 216, 7), 80, "no network_policy.allow rule matches"));
	add(&p.sb_allow, "203.0.113.0/28");
	CHECK(allowed(&p, NULL, ip(203, 0, 113, 2), 80, NULL));
	CHECK(!allowed(&p, NULL, ip(203, 0, 113, 20), 80, "no rule of the sandbox's allow list matches"));
	add(&p.sb_deny, "203.0.113.2");
	CHECK(!allowed(&p, NULL, ip(203, 0, 113, 2), 80, "deny rule 203.0.113.2"));
	net_policy_free(&p);
}

TEST(name_rules_match_pinned_addresses_until_the_ttl)
{
	struct net_policy p = { .gateway = NET_ADDR_GATEWAY };
	add(&p.allow, "*.pythonhosted.org");
	add(&p.allow, "pypi.org:443");
	add(&p.deny, "evil.pypi.org");
	static struct net_pins pins;
	pins.n = 0;
	struct net_verdict v;
	net_pins_add(&pins, "files.pythonhosted.org", ip(151, 101, 0, 223), 10, 0);
	net_pins_add(&pins, "pypi.org", ip(151, 101, 64, 223), 10, 0);
	net_policy_judge(&p, &pins, 1000, ip(151, 101, 0, 223), NET_PROTO_TCP, 443, &v);
	CHECK(v.allowed);
	net_policy_judge(&p, &pins, 1000, ip(151, 101, 64, 223), NET_PROTO_TCP, 443, &v);
	CHECK(v.allowed);
	net_policy_judge(&p, &pins, 1000, ip(151, 101, 64, 223), NET_PROTO_TCP, 80, &v);
	CHECK(!v.allowed);
	/* expired */
	net_policy_judge(&p, &pins, 11000, ip(151, 101, 0, 223), NET_PROTO_TCP, 443, &v);
	CHECK(!v.allowed);
	/* never resolved */
	net_policy_judge(&p, &pins, 1000, ip(151, 101, 1, 1), NET_PROTO_TCP, 443, &v);
	CHECK(!v.allowed);
	/* names */
	net_policy_judge_name(&p, "files.pythonhosted.org", &v);
	CHECK(v.allowed);
	net_policy_judge_name(&p, "pythonhosted.org", &v);
	CHECK(!v.allowed);
	net_policy_judge_name(&p, "evil.pypi.org", &v);
	CHECK(!v.allowed);
	CHECK_STR(v.why, "deny rule evil.pypi.org");
	net_policy_judge_name(&p, "example.com", &v);
	CHECK(!v.allowed);
	/* without allow lists every name not denied resolves */
	struct net_policy open = { .gateway = NET_ADDR_GATEWAY };
	net_policy_judge_name(&open, "example.com", &v);
	CHECK(v.allowed);
	net_policy_free(&p);
}

TEST(pins_stay_bounded)
{
	static struct net_pins pins;
	pins.n = 0;
	char name[32];
	for (int i = 0; i < NET_MAX_PINS + 100; i++) {
		snprintf(name, sizeof(name), "n%d.example", i);
		net_pins_add(&pins, name, (uint32_t)i, 100 + (uint32_t)i, 0);
	}
	CHECK_INT(pins.n, NET_MAX_PINS);
	/* the same pin again refreshes, never duplicates */
	net_pins_add(&pins, "n5000.example", 5000, 1, 0);
	size_t same = 0;
	for (size_t i = 0; i < pins.n; i++)
		same += strcmp(pins.v[i].name, "n5000.example") == 0;
	CHECK_INT(same, 1);
}

static int narrowing(const struct net_policy *cfg, const char *rule)
{
	struct net_rules rs = { 0 };
	if (add(&rs, rule) < 0)
		return -2;
	sbx_error_t err = NULL;
	int rc = net_policy_check_narrowing(cfg, &rs.v[0], &err);
	if (rc < 0 && (strcmp(err->scode, "S001") != 0 || strstr(err->msg, rule) == NULL))
		rc = -3;
	sbx_error_free(&err);
	net_rules_free(&rs);
	return rc;
}

TEST(narrowing_and_widening)
{
	struct net_policy open = { .gateway = NET_ADDR_GATEWAY };
	CHECK_INT(narrowing(&open, "93.184.216.0/24"), 0);
	CHECK_INT(narrowing(&open, "203.0.113.0/24"), -1);
	CHECK_INT(narrowing(&open, "0.0.0.0/0"), 0);
	CHECK_INT(narrowing(&open, "pypi.org"), 0);
	CHECK_INT(narrowing(&open, "10.0.0.0/8"), -1);
	CHECK_INT(narrowing(&open, "169.254.169.254:80"), -1);
	struct net_policy p = { .gateway = NET_ADDR_GATEWAY };
	add(&p.allow, "203.0.113.0/24");
	add(&p.allow, "198.51.100.7:443");
	add(&p.allow, "*.example.org");
	CHECK_INT(narrowing(&p, "203.0.113.8/29"), 0);
	CHECK_INT(narrowing(&p, "203.0.113.9:80"), 0);
	CHECK_INT(narrowing(&p, "198.51.100.7:443"), 0);
	CHECK_INT(narrowing(&p, "a.example.org"), 0);
	CHECK_INT(narrowing(&p, "*.b.example.org"), 0);
	CHECK_INT(narrowing(&p, "*.example.org"), 0);
	CHECK_INT(narrowing(&p, "203.0.112.0/23"), -1);
	CHECK_INT(narrowing(&p, "198.51.100.7"), -1);
	CHECK_INT(narrowing(&p, "198.51.100.7:80"), -1);
	CHECK_INT(narrowing(&p, "example.org"), -1);
	CHECK_INT(narrowing(&p, "example.com"), -1);
	net_policy_free(&p);
}
