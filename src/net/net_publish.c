/* The published ports in the network helper (see net_publish.h). */
#include "net/net_publish.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log_limit.h"
#include "proto/proto_net_addr.h"

/* How often a full port looks again for connections that closed. */
#define SWEEP_WHEN_FULL_MS 100
#define SWEEP_EVERY_MS 1000

struct conn {
	bool used, shut;
	uint8_t port;
	ino_t ino;
	int64_t active_ms;
};

static struct {
	size_t n;
	uint16_t guest[NET_MAX_PUBLISH];
	uint16_t host[NET_MAX_PUBLISH]; /* the listener's port, to recognise its connections */
	int fd[NET_MAX_PUBLISH];        /* slirp's listener, now the daemon's socket */
	uint32_t open[NET_MAX_PUBLISH];
	uint32_t max;
	uint32_t total, total_max; /* open on all ports, and its sandbox-wide bound */
	const char *sandbox;
	int pending;   /* the port whose connection slirp accepts in this round, -1 = none */
	int predicted; /* the descriptor that accept returns */
	int64_t swept_ms;
	uint64_t accepted, refused;
} P = { .max = 256, .total_max = NET_PUBLISH_SANDBOX_MAX, .pending = -1 };

static struct conn conns[NET_PUBLISH_FD_MAX];

static int port_value(const char *v, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long p = strtol(v, &end, 10);
	if (errno != 0 || end == v || *end != '\0' || p < lo || p > hi)
		return -1;
	*out = p;
	return 0;
}

int net_publish_arg(const char *opt, const char *val)
{
	long v;
	if (strcmp(opt, "--publish") == 0) {
		if (P.n == NET_MAX_PUBLISH || port_value(val, 1, 65535, &v) < 0)
			return -1;
		P.guest[P.n++] = (uint16_t)v;
		return 1;
	}
	if (strcmp(opt, "--publish-max") == 0) {
		if (port_value(val, 1, NET_PUBLISH_FD_MAX, &v) < 0)
			return -1;
		P.max = (uint32_t)v;
		return 1;
	}
	if (strcmp(opt, "--publish-sandbox-max") == 0) {
		if (port_value(val, 1, NET_PUBLISH_SANDBOX_MAX, &v) < 0)
			return -1;
		P.total_max = (uint32_t)v;
		return 1;
	}
	return 0;
}

/* The lowest free descriptor: what the next socket or accept returns. */
static int lowest_free(void)
{
	int d = dup(STDIN_FILENO);
	if (d >= 0)
		close(d);
	return d;
}

static int local_port(int fd, uint32_t *addr, uint16_t *port)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0 || len != sizeof(sa) || sa.sin_family != AF_INET)
		return -1;
	*addr = ntohl(sa.sin_addr.s_addr);
	*port = ntohs(sa.sin_port);
	return 0;
}

static bool listening(int fd)
{
	int on = 0;
	socklen_t len = sizeof(on);
	return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) == 0 && on == 1;
}

int net_publish_setup(Slirp *slirp, const char *sandbox, sbx_error_t *err)
{
	P.sandbox = sandbox;
	for (size_t i = 0; i < P.n; i++) {
		int given = NET_HELPER_FD_PUBLISH + (int)i;
		uint32_t addr;
		if (!listening(given) || local_port(given, &addr, &P.host[i]) < 0)
			return sbx_error_set(err, EBADF, "published port %u: descriptor %d is no listening TCP socket",
					     P.guest[i], given);
		/* slirp makes its own listener on an ephemeral loopback port
		 * (nothing accepts on it before the swap below), which then
		 * becomes the daemon's socket under the same number. */
		int slot = lowest_free();
		struct in_addr lo = { htonl(INADDR_LOOPBACK) }, guest = { htonl(NET_ADDR_GUEST) };
		uint16_t p;
		if (slot < 0 || slirp_add_hostfwd(slirp, 0, lo, 0, guest, P.guest[i]) < 0)
			return sbx_error_set(err, EIO, "published port %u: slirp host forward", P.guest[i]);
		if (!listening(slot) || local_port(slot, &addr, &p) < 0 || addr != INADDR_LOOPBACK)
			return sbx_error_set(err, EIO, "published port %u: slirp's listener is not where expected",
					     P.guest[i]);
		if (dup2(given, slot) < 0)
			return sbx_error_errno(err, errno, "published port %u", P.guest[i]);
		close(given);
		P.fd[i] = slot;
	}
	return 0;
}

/* The totals, where the daemon reads them (NET_BEACON_PUBLISH_AT). */
static void publish_totals(void)
{
	uint64_t v[2] = { P.accepted, P.refused };
	if (pwrite(NET_HELPER_FD_BEACON, v, sizeof(v), NET_BEACON_PUBLISH_AT) != (ssize_t)sizeof(v))
		sbx_debug_limited("net: sandbox %s: published ports' totals: %s", P.sandbox, strerror(errno));
}

static void release(int fd)
{
	if (P.open[conns[fd].port] > 0)
		P.open[conns[fd].port]--;
	if (P.total > 0)
		P.total--;
	conns[fd] = (struct conn){ 0 };
}

/* Both ends closed: slirp keeps the socket through its guest side's
 * TIME_WAIT (seconds), but the caller is gone and holds no slot. */
static bool finished(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
		return false;
	return ti.tcpi_state == TCP_TIME_WAIT || ti.tcpi_state == TCP_CLOSE || ti.tcpi_state == TCP_CLOSING ||
	       ti.tcpi_state == TCP_LAST_ACK;
}

static void sweep(int64_t now_ms)
{
	P.swept_ms = now_ms;
	for (int fd = 0; fd < NET_PUBLISH_FD_MAX; fd++) {
		struct conn *c = &conns[fd];
		if (!c->used)
			continue;
		struct stat st;
		if (fstat(fd, &st) < 0 || st.st_ino != c->ino || finished(fd)) {
			release(fd);
		} else if (!c->shut && now_ms - c->active_ms > NET_PUBLISH_IDLE_MS) {
			/* slirp reads the end, tells the guest and closes it. */
			shutdown(fd, SHUT_RDWR);
			c->shut = true;
		}
	}
}

/* Accepts port i's waiting connection and resets it: 0, the caller logs;
 * -1 when the caller went away first. */
static int refuse(size_t i)
{
	int c = accept4(P.fd[i], NULL, NULL, SOCK_CLOEXEC);
	if (c < 0)
		return -1;
	struct linger rst = { 1, 0 };
	setsockopt(c, SOL_SOCKET, SO_LINGER, &rst, sizeof(rst)); /* the caller sees a reset */
	close(c);
	P.refused++;
	publish_totals();
	return 0;
}

int net_publish_revents(int fd, int r, int64_t now_ms)
{
	if (fd >= 0 && fd < NET_PUBLISH_FD_MAX && conns[fd].used && r != 0)
		conns[fd].active_ms = now_ms;
	if (!(r & SLIRP_POLL_IN))
		return r;
	for (size_t i = 0; i < P.n; i++) {
		if (fd != P.fd[i])
			continue;
		/* One accept a round, so that the new descriptor is known to
		 * be this port's; the others stay readable for the next. */
		if (P.pending >= 0)
			return r & ~SLIRP_POLL_IN;
		if ((P.open[i] >= P.max || P.total >= P.total_max) && now_ms - P.swept_ms >= SWEEP_WHEN_FULL_MS)
			sweep(now_ms);
		if (P.open[i] >= P.max) {
			if (refuse(i) == 0)
				sbx_warn_limited("net: sandbox %s: connection to published port %u (guest %u) "
						 "refused: %u open, publish_max_connections is %u",
						 P.sandbox, P.host[i], P.guest[i], P.open[i], P.max);
			return r & ~SLIRP_POLL_IN;
		}
		if (P.total >= P.total_max) {
			if (refuse(i) == 0)
				sbx_warn_limited("net: sandbox %s: connection to published port %u (guest %u) "
						 "refused: %u open on all its ports, the sandbox-wide bound is %u",
						 P.sandbox, P.host[i], P.guest[i], P.total, P.total_max);
			return r & ~SLIRP_POLL_IN;
		}
		P.pending = (int)i;
		P.predicted = lowest_free();
		return r;
	}
	return r;
}

/* The descriptor slirp's accept returned, when it is a connection to
 * port i's listener. */
static void record(int fd, size_t i, int64_t now_ms)
{
	struct stat st;
	uint32_t addr;
	uint16_t port;
	if (fd < 0 || fd == P.fd[i] || fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode) || listening(fd) ||
	    local_port(fd, &addr, &port) < 0 || port != P.host[i])
		return; /* the caller went away before the accept */
	if (fd >= NET_PUBLISH_FD_MAX) {
		shutdown(fd, SHUT_RDWR);
		P.refused++;
		publish_totals();
		return;
	}
	if (conns[fd].used && conns[fd].ino == st.st_ino)
		return;
	if (conns[fd].used)
		release(fd); /* closed, and its number taken again */
	conns[fd] = (struct conn){ .used = true, .port = (uint8_t)i, .ino = st.st_ino, .active_ms = now_ms };
	P.open[i]++;
	P.total++;
	P.accepted++;
	publish_totals();
}

void net_publish_after_poll(int64_t now_ms)
{
	if (P.pending >= 0) {
		record(P.predicted, (size_t)P.pending, now_ms);
		P.pending = -1;
	}
	if (P.n > 0 && now_ms - P.swept_ms >= SWEEP_EVERY_MS)
		sweep(now_ms);
}

void net_publish_totals(uint64_t *accepted, uint64_t *refused)
{
	*accepted = P.accepted;
	*refused = P.refused;
}
