/* The denial reasons and the helper's report (see net_report.h). */
#include "net/net_report.h"

#include <errno.h>
#include <string.h>

static const char *const names[NET_DENY_N] = {
	[NET_DENY_HOST_PORT] = "host_port",
	[NET_DENY_DENY_RULE] = "deny_rule",
	[NET_DENY_DENIED_RANGE] = "denied_range",
	[NET_DENY_NOT_ALLOWED] = "not_allowed",
	[NET_DENY_DNS_PORT] = "dns_port",
	[NET_DENY_DNS_NAME] = "dns_name",
	[NET_DENY_DNS_REBINDING] = "dns_rebinding",
	[NET_DENY_DNS_BUSY] = "dns_busy",
	[NET_DENY_MALFORMED] = "malformed",
	[NET_DENY_NOT_IPV4] = "not_ipv4",
	[NET_DENY_FRAGMENT] = "fragment",
	[NET_DENY_SPOOFED] = "spoofed",
};

const char *net_deny_reason_name(enum net_deny_reason r)
{
	return (unsigned)r < NET_DENY_N ? names[r] : NULL;
}

void net_report_encode(const struct net_report *r, uint8_t out[NET_REPORT_LEN])
{
	memset(out, 0, NET_REPORT_HEADER);
	out[0] = NET_REPORT_VERSION;
	out[1] = NET_DENY_N;
	for (size_t i = 0; i < NET_DENY_N; i++) {
		uint64_t v = r->denied[i] < NET_REPORT_MAX_COUNT ? r->denied[i] : NET_REPORT_MAX_COUNT;
		for (size_t b = 0; b < 8; b++)
			out[NET_REPORT_HEADER + 8 * i + b] = (uint8_t)(v >> (8 * b));
	}
}

int net_report_accept(struct net_report *seen, const uint8_t *msg, size_t len, struct net_report *delta,
		      sbx_error_t *err)
{
	if (len != NET_REPORT_LEN)
		return sbx_error_set(err, EBADMSG, "network report of %zu bytes (expected %d)", len, NET_REPORT_LEN);
	if (msg[0] != NET_REPORT_VERSION || msg[1] != NET_DENY_N)
		return sbx_error_set(err, EBADMSG, "network report version %u with %u counts (expected %d with %d)",
				     msg[0], msg[1], NET_REPORT_VERSION, NET_DENY_N);
	for (size_t i = 2; i < NET_REPORT_HEADER; i++) {
		if (msg[i] != 0)
			return sbx_error_set(err, EBADMSG, "network report: header byte %zu is not zero", i);
	}
	struct net_report next;
	for (size_t i = 0; i < NET_DENY_N; i++) {
		uint64_t v = 0;
		for (size_t b = 0; b < 8; b++)
			v |= (uint64_t)msg[NET_REPORT_HEADER + 8 * i + b] << (8 * b);
		if (v > NET_REPORT_MAX_COUNT)
			return sbx_error_set(err, ERANGE, "network report: %s count %llu above the cap", names[i],
					     (unsigned long long)v);
		if (v < seen->denied[i])
			return sbx_error_set(err, ERANGE, "network report: %s count went down from %llu to %llu", names[i],
					     (unsigned long long)seen->denied[i], (unsigned long long)v);
		next.denied[i] = v;
	}
	for (size_t i = 0; i < NET_DENY_N; i++)
		delta->denied[i] = next.denied[i] - seen->denied[i];
	*seen = next;
	return 0;
}
