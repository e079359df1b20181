/* The helper's side of the report (see net_report.h): sent on the
 * lifeline when the counts changed and the daemon has read the last one. */
#include <errno.h>
#include <linux/sockios.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "common/log_limit.h"
#include "net/net_helper.h"

void net_report_push(struct net_helper *h, int fd, bool final)
{
	if (!h->report_dirty || fd < 0)
		return;
	/* One report unread at most: a daemon that reads seldom finds the
	 * socket short, and the final report always finds room. */
	if (!final) {
		int queued = 0;
		if (ioctl(fd, SIOCOUTQ, &queued) < 0) {
			sbx_debug_limited("net: report to the daemon: SIOCOUTQ: %s", strerror(errno));
			return;
		}
		if (queued > 0)
			return;
	}
	uint8_t msg[NET_REPORT_LEN];
	net_report_encode(&h->report, msg);
	if (send(fd, msg, sizeof(msg), MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)sizeof(msg))
		h->report_dirty = false;
	else
		sbx_debug_limited("net: report to the daemon: %s", strerror(errno));
}
