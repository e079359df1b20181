/* The daemon's side of the network helpers' denial reports
 * (vm/net_link_report.c): reports read into
 * sandbox_libkrun_network_denials_total as deltas, a lying helper refused
 * and not believed again, a flood read NET_LINK_REPORTS_READ at a time;
 * and, with the real sandbox-net-helper (SANDBOX_NET_HELPER, unjailed)
 * behind net_link_spawn, a guest's denied connections counted live at a
 * collect and, for those not yet read, once the link is closed: every
 * denial exactly once; and its published ports' sandbox-wide bound on open
 * connections across ports (--publish-sandbox-max), beside each port's. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/metrics_families.h"
#include "guest_frame.h"
#include "harness.h"
#include "net/net_frame.h"
#include "vm/net_link.h"

/* The metric's value for a reason, read from its exposition; -1 when the
 * series is missing. */
static double denials(enum net_deny_reason r)
{
	struct sbx_metric *fams[] = { &sbx_m_net_denials };
	size_t len = 0;
	sbx_error_t err = NULL;
	char *text = sbx_metrics_render(fams, 1, &len, &err);
	sbx_error_free(&err);
	if (text == NULL)
		return -2;
	char key[96];
	snprintf(key, sizeof(key), "\nsandbox_libkrun_network_denials_total{reason=\"%s\"} ", net_deny_reason_name(r));
	const char *at = strstr(text, key);
	double v = at != NULL ? strtod(at + strlen(key), NULL) : -1;
	free(text);
	return v;
}

static void send_report(int fd, const struct net_report *r)
{
	uint8_t msg[NET_REPORT_LEN];
	net_report_encode(r, msg);
	if (send(fd, msg, sizeof(msg), MSG_DONTWAIT) != (ssize_t)sizeof(msg))
		sbx_test_fail(__FILE__, __LINE__, "send: %s", strerror(errno));
}

TEST(every_reason_is_listed_at_zero_before_any_denial)
{
	net_link_report_collect();
	for (int i = 0; i < NET_DENY_N; i++)
		CHECK(denials(i) == 0);
}

TEST(reports_add_their_deltas)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
	double range0 = denials(NET_DENY_DENIED_RANGE), name0 = denials(NET_DENY_DNS_NAME);
	struct net_report r = { { 0 } }, seen = { { 0 } };
	r.denied[NET_DENY_DENIED_RANGE] = 2;
	send_report(sv[0], &r);
	r.denied[NET_DENY_DENIED_RANGE] = 5;
	r.denied[NET_DENY_DNS_NAME] = 1;
	send_report(sv[0], &r);
	send_report(sv[0], &r); /* the same again: adds nothing */
	CHECK(net_link_report_read(sv[1], &seen, 64, "unit helper"));
	CHECK(denials(NET_DENY_DENIED_RANGE) == range0 + 5);
	CHECK(denials(NET_DENY_DNS_NAME) == name0 + 1);
	/* nothing waiting, or the helper gone: nothing read, no failure */
	CHECK(net_link_report_read(sv[1], &seen, 64, "unit helper"));
	close(sv[0]);
	CHECK(net_link_report_read(sv[1], &seen, 64, "unit helper"));
	CHECK(denials(NET_DENY_DENIED_RANGE) == range0 + 5);
	close(sv[1]);
}

/* One hostile message after a good one: refused, the good one counted, the
 * metric unchanged by the bad one and by anything after it. */
static int refused_after_good(const void *bad, size_t len)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return 0;
	struct net_report r = { { 0 } }, seen = { { 0 } };
	r.denied[NET_DENY_NOT_ALLOWED] = 7;
	double before = denials(NET_DENY_NOT_ALLOWED), busy = denials(NET_DENY_DNS_BUSY);
	send_report(sv[0], &r);
	int ok = send(sv[0], bad, len, MSG_DONTWAIT) == (ssize_t)len;
	r.denied[NET_DENY_NOT_ALLOWED] = 9;
	send_report(sv[0], &r);
	ok = ok && !net_link_report_read(sv[1], &seen, 64, "unit helper");
	ok = ok && denials(NET_DENY_NOT_ALLOWED) == before + 7 && denials(NET_DENY_DNS_BUSY) == busy;
	close(sv[0]);
	close(sv[1]);
	return ok;
}

TEST(a_lying_report_is_refused_and_nothing_after_it_counts)
{
	struct net_report r = { { 0 } };
	r.denied[NET_DENY_NOT_ALLOWED] = 3; /* below the 7 already reported */
	uint8_t msg[NET_REPORT_LEN];
	net_report_encode(&r, msg);
	CHECK(refused_after_good(msg, sizeof(msg)));
	r.denied[NET_DENY_NOT_ALLOWED] = 8;
	net_report_encode(&r, msg);
	msg[0] = 2; /* another version */
	CHECK(refused_after_good(msg, sizeof(msg)));
	for (int b = 0; b < 8; b++)
		msg[NET_REPORT_HEADER + 8 * NET_DENY_DNS_BUSY + b] = 0xff; /* above the cap */
	msg[0] = NET_REPORT_VERSION;
	CHECK(refused_after_good(msg, sizeof(msg)));
	CHECK(refused_after_good(msg, 1));
	/* a large message is refused whole, not read in parts */
	static uint8_t big[60000];
	net_report_encode(&r, big);
	CHECK(refused_after_good(big, sizeof(big)));
}

TEST(a_flood_is_read_a_bounded_number_at_a_time)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
	struct net_report r = { { 0 } }, seen = { { 0 } };
	unsigned sent = 0;
	uint8_t msg[NET_REPORT_LEN];
	for (;; sent++) {
		r.denied[NET_DENY_FRAGMENT] = sent + 1;
		net_report_encode(&r, msg);
		if (send(sv[0], msg, sizeof(msg), MSG_DONTWAIT) < 0)
			break;
	}
	CHECK(sent > NET_LINK_REPORTS_READ);
	double before = denials(NET_DENY_FRAGMENT);
	CHECK(net_link_report_read(sv[1], &seen, NET_LINK_REPORTS_READ, "unit helper"));
	CHECK(denials(NET_DENY_FRAGMENT) == before + NET_LINK_REPORTS_READ);
	/* the rest waits for the next read */
	CHECK(net_link_report_read(sv[1], &seen, sent, "unit helper"));
	CHECK(denials(NET_DENY_FRAGMENT) == before + sent);
	close(sv[0]);
	close(sv[1]);
}

/* A frame to the helper; then its answer (a RST) within a hang bound: it
 * has judged the frame. */
static int refused(int guest, uint32_t dst)
{
	uint8_t b[GFRAME_MAX];
	size_t n = gframe_tcp(b, (struct gframe_ip){ .dst = dst }, 22, NET_TCP_SYN, 0);
	if (send(guest, b, n, 0) != (ssize_t)n)
		return 0;
	struct pollfd p = { .fd = guest, .events = POLLIN };
	if (poll(&p, 1, 30000) != 1)
		return 0;
	ssize_t got = recv(guest, b, sizeof(b), 0);
	struct net_frame f;
	return got > 0 && net_frame_parse(b, (size_t)got, &f) == 0 && f.src == dst && (f.tcp_flags & NET_TCP_RST);
}

/* Waits (hang bound) until a report waits on the daemon's end. */
static int report_waits(const struct net_link *l)
{
	struct pollfd p = { .fd = l->lifeline, .events = POLLIN };
	return poll(&p, 1, 30000) == 1;
}

/* A stand-in keeper: gone with the test, never holding its output. */
static pid_t stand_in_keeper(void)
{
	pid_t keeper = fork();
	if (keeper == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || null < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
			_exit(1);
		pause();
		_exit(0);
	}
	return keeper;
}

TEST(the_real_helper_reports_live_and_its_last_counts_at_close)
{
	if (getenv("SANDBOX_NET_HELPER") == NULL) {
		sbx_test_skip("SANDBOX_NET_HELPER is not set (meson test sets it)");
		return;
	}
	pid_t keeper = stand_in_keeper();
	CHECK(keeper >= 0);
	struct net_link l;
	net_link_init(&l);
	sbx_error_t err = NULL;
	CHECK(net_link_open(&l, &err) == 0);
	int guest = dup(l.qemu_fd);
	char *args[] = { "--sandbox", "unit", "--dns-servers", "", NULL };
	int rc = net_link_spawn(&l, args, NULL, 0, keeper, NULL, "/nonexistent/unit-vm", &err);
	if (rc < 0)
		sbx_test_fail(__FILE__, __LINE__, "spawn: %s", sbx_error_msg(err));
	double before = denials(NET_DENY_DENIED_RANGE);
	if (rc == 0) {
		/* live: the first denial's report waits at once */
		CHECK(refused(guest, 0x0a000001));
		CHECK(report_waits(&l));
		net_link_report_collect();
		CHECK(denials(NET_DENY_DENIED_RANGE) == before + 1);
		/* two more, unread: the first goes at once, the second waits for
		 * a read that never comes; the close brings it */
		CHECK(refused(guest, 0x0a000002));
		CHECK(refused(guest, 0x0a000003));
		CHECK(denials(NET_DENY_DENIED_RANGE) == before + 1);
	}
	net_link_close(&l);
	CHECK(denials(NET_DENY_DENIED_RANGE) == before + 3);
	/* nothing counted twice: the link is gone from the list */
	net_link_report_collect();
	CHECK(denials(NET_DENY_DENIED_RANGE) == before + 3);
	close(guest);
	kill(keeper, SIGKILL);
	waitpid(keeper, NULL, 0);
	sbx_error_free(&err);
}

/* A listening TCP socket on a loopback port the kernel picks. */
static int loopback_listener(uint16_t *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*port = ntohs(sa.sin_port);
	return fd;
}

/* A caller's connection to the published port; -1 when refused outright. */
static int caller(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Waits (hang bound) until the helper has judged n connections in all;
 * adds its accepted and refused ones to total[]. */
static int judged(struct net_link *l, uint64_t total[2], uint64_t n)
{
	for (int i = 0; i < 3000 && total[0] + total[1] < n; i++) {
		uint64_t d[2];
		net_link_publish_take(l, d);
		total[0] += d[0];
		total[1] += d[1];
		if (total[0] + total[1] < n)
			nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
	}
	return total[0] + total[1] == n;
}

/* A caller's connection was reset (it reads ECONNRESET; hang bound). */
static int was_reset(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char b;
	return poll(&p, 1, 30000) == 1 && recv(fd, &b, 1, MSG_DONTWAIT) < 0 && errno == ECONNRESET;
}

/* Still open: nothing to read, no error (the guest never answers). */
static int held(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, 0) == 0;
}

TEST(the_sandbox_wide_bound_resets_connections_past_it_on_any_port)
{
	if (getenv("SANDBOX_NET_HELPER") == NULL) {
		sbx_test_skip("SANDBOX_NET_HELPER is not set (meson test sets it)");
		return;
	}
	/* 3 a port, 4 in all: 3 held on the first port and its 4th reset
	 * (its own cap, 3 open in all), then 1 held on the second, whose
	 * next 2 are reset though it holds only 1 */
	enum { N = 7 };
	static const int to[N] = { 0, 0, 0, 0, 1, 1, 1 }, kept[N] = { 1, 1, 1, 0, 1, 0, 0 };
	CHECK(NET_PUBLISH_SANDBOX_MAX >= 64); /* the default leaves room for a busy port */
	pid_t keeper = stand_in_keeper();
	CHECK(keeper >= 0);
	uint16_t port[2] = { 0, 0 };
	int listener[2] = { loopback_listener(&port[0]), loopback_listener(&port[1]) };
	CHECK(listener[0] >= 0 && listener[1] >= 0);
	struct net_link l;
	net_link_init(&l);
	sbx_error_t err = NULL;
	CHECK(net_link_open(&l, &err) == 0);
	int guest = dup(l.qemu_fd);
	char *args[] = { "--sandbox", "unit", "--dns-servers", "", "--publish-max", "3", "--publish-sandbox-max", "4",
			 "--publish", "8000", "--publish", "9000", NULL };
	int rc = net_link_spawn(&l, args, listener, 2, keeper, NULL, "/nonexistent/unit-vm", &err);
	if (rc < 0)
		sbx_test_fail(__FILE__, __LINE__, "spawn: %s", sbx_error_msg(err));
	int conn[N];
	uint64_t total[2] = { 0, 0 };
	for (int i = 0; i < N; i++) {
		conn[i] = rc == 0 ? caller(port[to[i]]) : -1;
		CHECK(conn[i] >= 0);
		CHECK(judged(&l, total, (uint64_t)i + 1)); /* in order: one at a time */
	}
	CHECK(total[0] == 4);
	CHECK(total[1] == 3);
	for (int i = 0; i < N; i++) {
		if (kept[i])
			CHECK(held(conn[i]));
		else
			CHECK(was_reset(conn[i]));
	}
	for (int i = 0; i < N; i++) {
		if (conn[i] >= 0)
			close(conn[i]);
	}
	net_link_close(&l);
	close(guest);
	close(listener[0]);
	close(listener[1]);
	kill(keeper, SIGKILL);
	waitpid(keeper, NULL, 0);
	sbx_error_free(&err);
}
