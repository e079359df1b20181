/* The network helpers' denial reports into the daemon's metric (see
 * net_link.h and net/net_report.h).  The links of live helpers are listed
 * here under one lock, so that a scrape reads them while VMs start and
 * stop on other threads. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "common/log.h"
#include "common/metrics_families.h"
#include "vm/net_link.h"

/* The final read, once the helper is gone: an honest one left at most two
 * reports (net_report_push). */
#define FINAL_READ 256

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct net_link *live;

static void add(const struct net_report *delta)
{
	for (int i = 0; i < NET_DENY_N; i++)
		sbx_metric_add(&sbx_m_net_denials, (const char *[]){ net_deny_reason_name(i) }, (double)delta->denied[i]);
}

bool net_link_report_read(int fd, struct net_report *seen, unsigned max, const char *who)
{
	for (unsigned i = 0; i < max; i++) {
		/* one byte more than a report: a longer message is refused, not cut */
		uint8_t buf[NET_REPORT_LEN + 1];
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			sbx_debug("%s: reading its report: %s", who, strerror(errno));
		if (n <= 0)
			return true;
		struct net_report delta;
		sbx_error_t err = NULL;
		if (net_report_accept(seen, buf, (size_t)n, &delta, &err) < 0) {
			sbx_warn("%s: %s; its denials are no longer counted", who, sbx_error_msg(err));
			sbx_error_free(&err);
			return false;
		}
		add(&delta);
	}
	return true;
}

/* Under the lock. */
static void read_link(struct net_link *l, unsigned max)
{
	if (l->report_bad || l->lifeline < 0)
		return;
	char who[64];
	snprintf(who, sizeof(who), "network helper %d", (int)l->report_pid);
	l->report_bad = !net_link_report_read(l->lifeline, &l->seen, max, who);
}

void net_link_report_watch(struct net_link *l)
{
	pthread_mutex_lock(&lock);
	if (!l->listed) {
		l->report_pid = l->pid;
		l->prev = NULL;
		l->next = live;
		if (live != NULL)
			live->prev = l;
		live = l;
		l->listed = true;
	}
	pthread_mutex_unlock(&lock);
}

void net_link_report_end(struct net_link *l)
{
	pthread_mutex_lock(&lock);
	if (l->listed) {
		read_link(l, FINAL_READ);
		if (l->prev != NULL)
			l->prev->next = l->next;
		else
			live = l->next;
		if (l->next != NULL)
			l->next->prev = l->prev;
		l->prev = l->next = NULL;
		l->listed = false;
	}
	pthread_mutex_unlock(&lock);
}

void net_link_report_collect(void)
{
	static const struct net_report none;
	add(&none);
	pthread_mutex_lock(&lock);
	for (struct net_link *l = live; l != NULL; l = l->next)
		read_link(l, NET_LINK_REPORTS_READ);
	pthread_mutex_unlock(&lock);
}
