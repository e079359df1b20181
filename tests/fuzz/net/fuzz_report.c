/* The network helper's reports as the daemon checks them
 * (net_report_accept): the helper runs the guest's TCP/IP peer, so its
 * bytes are the guest's once it is compromised.  The input is a sequence
 * of messages, each a length byte and that many bytes; a length of 0
 * takes the next NET_DENY_N bytes as increments over the counts last
 * accepted and encodes them honestly, so that runs of valid reports are
 * within the fuzzer's reach.  Must hold: a refused report changes nothing;
 * an accepted one moves each count up by its delta exactly, never above
 * NET_REPORT_MAX_COUNT; the deltas add up to the counts; the counts,
 * encoded again, are accepted with a zero delta. */
#include <stdlib.h>
#include <string.h>

#include "net/net_report.h"

static void check(struct net_report *seen, struct net_report *sum, const uint8_t *msg, size_t len)
{
	struct net_report before = *seen, delta;
	sbx_error_t err = NULL;
	int rc = net_report_accept(seen, msg, len, &delta, &err);
	if ((rc < 0) != (err != NULL))
		abort();
	sbx_error_free(&err);
	if (rc < 0) {
		if (memcmp(seen, &before, sizeof(before)) != 0)
			abort();
		return;
	}
	if (len != NET_REPORT_LEN)
		abort();
	for (int i = 0; i < NET_DENY_N; i++) {
		if (seen->denied[i] > NET_REPORT_MAX_COUNT || seen->denied[i] != before.denied[i] + delta.denied[i])
			abort();
		sum->denied[i] += delta.denied[i];
		if (sum->denied[i] != seen->denied[i])
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct net_report seen = { { 0 } }, sum = { { 0 } };
	size_t at = 0;
	while (at < size) {
		size_t len = data[at++];
		if (len == 0) {
			struct net_report next = seen;
			for (int i = 0; i < NET_DENY_N && at < size; i++)
				next.denied[i] += data[at++];
			uint8_t msg[NET_REPORT_LEN];
			net_report_encode(&next, msg);
			check(&seen, &sum, msg, sizeof(msg));
			continue;
		}
		if (len > size - at)
			len = size - at;
		check(&seen, &sum, data + at, len);
		at += len;
	}
	uint8_t again[NET_REPORT_LEN];
	net_report_encode(&seen, again);
	struct net_report copy = seen, delta;
	sbx_error_t err = NULL;
	if (net_report_accept(&copy, again, sizeof(again), &delta, &err) < 0)
		abort();
	for (int i = 0; i < NET_DENY_N; i++) {
		if (delta.denied[i] != 0)
			abort();
	}
	return 0;
}
