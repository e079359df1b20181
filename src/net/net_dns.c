/* DNS query parsing and answer building (see net_dns.h). */
#include "net/net_dns.h"

#include <string.h>

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

int net_dns_parse_query(const uint8_t *p, size_t len, struct net_dns_query *q)
{
	memset(q, 0, sizeof(*q));
	if (len < 12)
		return -1;
	q->id = get16(p);
	q->flags = get16(p + 2);
	q->opcode = (uint8_t)((q->flags >> 11) & 0x0f);
	/* a response, or not exactly one question and no answers */
	if ((q->flags & 0x8000) || get16(p + 4) != 1 || get16(p + 6) != 0 || get16(p + 8) != 0)
		return -1;
	size_t off = 12, out = 0;
	for (;;) {
		if (off >= len)
			return -1;
		size_t l = p[off];
		if (l == 0) {
			off++;
			break;
		}
		if (l > 63 || off + 1 + l > len) /* compression pointers have no place in a query */
			return -1;
		if (out + (out > 0) + l > NET_NAME_MAX)
			return -1;
		if (out > 0)
			q->name[out++] = '.';
		for (size_t i = 0; i < l; i++) {
			uint8_t c = p[off + 1 + i];
			if (c == 0 || c == '.')
				return -1;
			q->name[out++] = (char)c;
		}
		off += 1 + l;
	}
	q->name[out] = '\0';
	if (off + 4 > len)
		return -1;
	q->qtype = get16(p + off);
	q->qclass = get16(p + off + 2);
	q->question_len = off + 4 - 12;
	if (q->question_len > sizeof(q->question))
		return -1;
	memcpy(q->question, p + 12, q->question_len);
	return 0;
}

size_t net_dns_build_reply(const struct net_dns_query *q, enum net_dns_rcode rcode, const uint32_t *addrs,
			   const uint32_t *ttls, size_t naddrs, uint8_t out[NET_DNS_MAX])
{
	size_t room = (NET_DNS_MAX - 12 - q->question_len) / 16;
	if (rcode != NET_DNS_NOERROR)
		naddrs = 0;
	else if (naddrs > room)
		naddrs = room;
	put16(out, q->id);
	/* QR, the query's opcode and RD, RA */
	put16(out + 2, (uint16_t)(0x8000 | (q->opcode << 11) | (q->flags & 0x0100) | 0x0080 | (rcode & 0x0f)));
	put16(out + 4, 1);
	put16(out + 6, (uint16_t)naddrs);
	put16(out + 8, 0);
	put16(out + 10, 0);
	memcpy(out + 12, q->question, q->question_len);
	size_t off = 12 + q->question_len;
	for (size_t i = 0; i < naddrs; i++) {
		uint8_t *a = out + off;
		put16(a, 0xc00c); /* the question's name */
		put16(a + 2, NET_DNS_TYPE_A);
		put16(a + 4, NET_DNS_CLASS_IN);
		put16(a + 6, (uint16_t)(ttls[i] >> 16));
		put16(a + 8, (uint16_t)ttls[i]);
		put16(a + 10, 4);
		put16(a + 12, (uint16_t)(addrs[i] >> 16));
		put16(a + 14, (uint16_t)addrs[i]);
		off += 16;
	}
	return off;
}
