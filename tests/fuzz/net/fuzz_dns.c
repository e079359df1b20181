/* DNS queries from a hostile guest: the parser, the name check, and the
 * answers built for them (never over 512 bytes, echoing the question). */
#include <stdlib.h>
#include <string.h>

#include "net/net_dns.h"
#include "net/net_policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct net_dns_query q;
	if (net_dns_parse_query(data, size, &q) < 0)
		return 0;
	if (strlen(q.name) > NET_NAME_MAX || q.question_len < 5 || 12 + q.question_len > size)
		abort();
	char name[NET_NAME_MAX + 1];
	memcpy(name, q.name, sizeof(name));
	if (net_name_normalize(name) == 0 && strlen(name) == 0)
		abort();
	uint32_t addrs[NET_DNS_MAX_ADDRS], ttls[NET_DNS_MAX_ADDRS];
	for (int i = 0; i < NET_DNS_MAX_ADDRS; i++)
		addrs[i] = ttls[i] = (uint32_t)i * 0x01010101u;
	uint8_t out[NET_DNS_MAX];
	size_t n = net_dns_build_reply(&q, NET_DNS_NOERROR, addrs, ttls, NET_DNS_MAX_ADDRS, out);
	if (n > NET_DNS_MAX || n < 12 + q.question_len || memcmp(out + 12, data + 12, q.question_len) != 0 ||
	    !(out[2] & 0x80) || out[0] != data[0] || out[1] != data[1])
		abort();
	return 0;
}
