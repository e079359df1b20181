/* The denials of the egress policy and the resolver: each distinct one
 * logged once, every one counted, by reason too (the daemon's metric).
 * Below net_guard.c and net_resolver.c. */
#include <stdint.h>

#include "common/log_limit.h"
#include "net/net_helper.h"

void net_denial_count(struct net_helper *h, enum net_deny_reason reason)
{
	if ((unsigned)reason >= NET_DENY_N)
		return;
	if (h->report.denied[reason] < NET_REPORT_MAX_COUNT)
		h->report.denied[reason]++;
	h->report_dirty = true;
}

void net_denial(struct net_helper *h, enum net_deny_reason reason, const char *what, uint64_t key, const char *why)
{
	h->denials++;
	net_denial_count(h, reason);
	key = key * 0x9e3779b97f4a7c15ull + 1; /* never 0: 0 marks a free slot */
	size_t i = (size_t)(key % NET_DENIAL_SLOTS);
	for (size_t probe = 0; probe < NET_DENIAL_SLOTS; probe++, i = (i + 1) % NET_DENIAL_SLOTS) {
		if (h->denial_seen[i] == key)
			return;
		if (h->denial_seen[i] == 0) {
			h->denial_seen[i] = key;
			sbx_warn_limited("net: sandbox %s: denied %s (%s)", h->sandbox, what, why);
			return;
		}
	}
	/* A guest scanning ports must not flood the log: past the table, the
	 * total at exit counts them. */
	if (!h->denial_table_full)
		sbx_warn("net: sandbox %s: more than %d distinct denials; logging only their count from here",
			 h->sandbox, NET_DENIAL_SLOTS);
	h->denial_table_full = true;
}
