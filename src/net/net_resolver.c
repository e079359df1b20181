/* The guest's DNS server at NET_ADDR_DNS: names the policy denies are
 * REFUSED, the rest resolved with c-ares against the configured servers;
 * answers pointing into always-denied ranges are dropped (rebinding) and
 * the others pinned for the policy's name rules. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log_limit.h"
#include "proto/proto_net_addr.h"
#include "net/net_dns.h"
#include "net/net_helper.h"

#define QUERY_TIMEOUT_MS 2000
#define QUERY_TRIES 2
#define PIN_MIN_TTL 5
#define PIN_MAX_TTL 86400

struct pending {
	struct net_helper *h;
	struct net_dns_query q;
	size_t len;
	uint8_t frame[]; /* the guest's query frame: the answer goes back to its sender */
};

static void answer(struct net_helper *h, const uint8_t *frame, size_t len, const struct net_dns_query *q,
		   enum net_dns_rcode rcode, const uint32_t *addrs, const uint32_t *ttls, size_t n)
{
	struct net_frame f;
	if (net_frame_parse(frame, len, &f) < 0)
		return;
	uint8_t msg[NET_DNS_MAX];
	size_t mlen = net_dns_build_reply(q, rcode, addrs, ttls, n, msg);
	uint8_t out[NET_ETH_HLEN + 20 + 8 + NET_DNS_MAX];
	size_t olen = net_frame_udp_reply(&f, msg, mlen, out, sizeof(out));
	if (olen > 0)
		net_send_guest(h, out, olen);
}

static void resolved(void *arg, int status, int timeouts, unsigned char *abuf, int alen)
{
	struct pending *p = arg;
	struct net_helper *h = p->h;
	h->dns_pending--;
	if (status == ARES_EDESTRUCTION) {
		free(p);
		return;
	}
	uint32_t addrs[NET_DNS_MAX_ADDRS], ttls[NET_DNS_MAX_ADDRS];
	size_t n = 0;
	enum net_dns_rcode rcode = NET_DNS_NOERROR;
	struct ares_addrttl at[NET_DNS_MAX_ADDRS];
	int nat = NET_DNS_MAX_ADDRS;
	if (status == ARES_SUCCESS)
		status = ares_parse_a_reply(abuf, alen, NULL, at, &nat);
	if (status == ARES_SUCCESS) {
		int64_t now = sbx_now_ms();
		for (int i = 0; i < nat; i++) {
			uint32_t a = ntohl(at[i].ipaddr.s_addr);
			uint32_t ttl = at[i].ttl < 0 ? 0 : (uint32_t)at[i].ttl;
			if (net_policy_rebinding(&h->policy, a)) {
				char what[NET_NAME_MAX + 64];
				snprintf(what, sizeof(what), "dns answer %s -> %u.%u.%u.%u", p->q.name, a >> 24,
					 (a >> 16) & 255, (a >> 8) & 255, a & 255);
				net_denial(h, NET_DENY_DNS_REBINDING, what, (uint64_t)a << 8 | 0x35,
					   "answer into an always-denied range dropped (rebinding)");
				continue;
			}
			net_pins_add(h->pins, p->q.name, a, ttl < PIN_MIN_TTL ? PIN_MIN_TTL : ttl > PIN_MAX_TTL ? PIN_MAX_TTL : ttl,
				     now);
			addrs[n] = a;
			ttls[n++] = ttl;
		}
	} else if (status == ARES_ENOTFOUND) {
		rcode = NET_DNS_NXDOMAIN;
	} else if (status != ARES_ENODATA) {
		rcode = NET_DNS_SERVFAIL;
		sbx_warn_limited("net: sandbox %s: resolving %s failed: %s", h->sandbox, p->q.name, ares_strerror(status));
	}
	answer(h, p->frame, p->len, &p->q, rcode, addrs, ttls, n);
	free(p);
}

static uint64_t name_key(const char *s)
{
	uint64_t k = 0xcbf29ce484222325ull;
	for (; *s != '\0'; s++)
		k = (k ^ (uint8_t)*s) * 0x100000001b3ull;
	return k;
}

void net_resolver_query(struct net_helper *h, const struct net_frame *f)
{
	struct net_dns_query q;
	if (net_dns_parse_query(f->payload, f->payload_len, &q) < 0)
		return;
	char name[NET_NAME_MAX + 1];
	memcpy(name, q.name, sizeof(name));
	if (q.opcode != 0) {
		answer(h, f->eth, f->len, &q, NET_DNS_NOTIMP, NULL, NULL, 0);
		return;
	}
	if (q.qclass != NET_DNS_CLASS_IN || net_name_normalize(name) < 0) {
		answer(h, f->eth, f->len, &q, NET_DNS_REFUSED, NULL, NULL, 0);
		return;
	}
	struct net_verdict v;
	net_policy_judge_name(&h->policy, name, &v);
	if (!v.allowed) {
		char what[NET_NAME_MAX + 16];
		snprintf(what, sizeof(what), "dns %s", name);
		net_denial(h, v.reason, what, name_key(name), v.why);
		answer(h, f->eth, f->len, &q, NET_DNS_REFUSED, NULL, NULL, 0);
		return;
	}
	/* IPv4 only: other types have no answer here */
	if (q.qtype != NET_DNS_TYPE_A) {
		answer(h, f->eth, f->len, &q, NET_DNS_NOERROR, NULL, NULL, 0);
		return;
	}
	if (!h->have_ares || h->dns_pending >= NET_RESOLVER_MAX_PENDING) {
		if (h->have_ares)
			net_denial_count(h, NET_DENY_DNS_BUSY);
		sbx_warn_limited("net: sandbox %s: %s: no resolver%s", h->sandbox, name,
			 h->have_ares ? " free (too many queries in flight)" : "");
		answer(h, f->eth, f->len, &q, NET_DNS_SERVFAIL, NULL, NULL, 0);
		return;
	}
	struct pending *p = malloc(sizeof(*p) + f->len);
	if (p == NULL) {
		answer(h, f->eth, f->len, &q, NET_DNS_SERVFAIL, NULL, NULL, 0);
		return;
	}
	p->h = h;
	p->q = q;
	memcpy(p->q.name, name, sizeof(name));
	p->len = f->len;
	memcpy(p->frame, f->eth, f->len);
	h->dns_pending++;
	ares_query(h->ares, name, NET_DNS_CLASS_IN, NET_DNS_TYPE_A, resolved, p);
}

int net_resolver_init(struct net_helper *h, sbx_error_t *err)
{
	int rc = ares_library_init(ARES_LIB_INIT_ALL);
	if (rc != ARES_SUCCESS)
		return sbx_error_set(err, 0, "c-ares: %s", ares_strerror(rc));
	struct ares_options o = { .flags = ARES_FLAG_NOSEARCH | ARES_FLAG_NOALIASES,
				  .timeout = QUERY_TIMEOUT_MS,
				  .tries = QUERY_TRIES };
	rc = ares_init_options(&h->ares, &o, ARES_OPT_FLAGS | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES);
	if (rc != ARES_SUCCESS)
		return sbx_error_set(err, 0, "c-ares: %s", ares_strerror(rc));
	h->have_ares = true;
	if (h->dns_servers != NULL && (rc = ares_set_servers_ports_csv(h->ares, h->dns_servers)) != ARES_SUCCESS)
		return sbx_error_set(err, 0, "dns_servers '%s': %s", h->dns_servers, ares_strerror(rc));
	return 0;
}

void net_resolver_free(struct net_helper *h)
{
	if (h->have_ares)
		ares_destroy(h->ares);
	h->have_ares = false;
	ares_library_cleanup();
}
