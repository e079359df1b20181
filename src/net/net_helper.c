/* sandbox-net-helper: the user-mode network of one VM (see net_helper.h).
 *
 *   sandbox-net-helper --sandbox ID [--host-port N]... [--allow RULE]...
 *       [--deny RULE]... [--sandbox-allow RULE]... [--sandbox-deny RULE]...
 *       [--dns-servers host:port,...] [--publish-max N] [--publish-sandbox-max N]
 *       [--publish GUEST_PORT]...
 *
 * The daemon starts it with the descriptors of proto/proto_net_addr.h.  It exits when
 * the lifeline reaches EOF or the VM's keeper exits, so it never outlives
 * either; a bad argument exits 2.  Its denials by reason go back on the
 * lifeline (net_report.h), the last report as it exits. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log_limit.h"
#include "proto/proto_net_addr.h"
#include "net/net_helper.h"
#include "net/net_publish.h"
#include "net/net_seccomp.h"

/* slirp's sockets: the guest's own connections and the published ports' */
#define MAX_POLL (512 + NET_PUBLISH_FD_MAX)
#define MAX_TIMERS 16
#define FRAMES_PER_ROUND 64
#define FRAME_MAX 65536
#define NOBODY 65534

struct timer {
	bool used;
	SlirpTimerId id;
	void *cb_opaque;
	int64_t expire_ms; /* -1 = not armed */
};

static struct net_helper H;
static struct pollfd pfd[MAX_POLL];
static int npfd;
static struct timer timers[MAX_TIMERS];
static int64_t round_ms; /* when this round's poll returned */

static ssize_t cb_send(const void *buf, size_t len, void *opaque)
{
	net_guard_output(opaque, buf, len);
	return (ssize_t)len;
}

static void cb_guest_error(const char *msg, void *opaque)
{
	sbx_debug_limited("net: slirp: %s", msg);
}

static int64_t cb_clock(void *opaque)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *cb_timer_new_opaque(SlirpTimerId id, void *cb_opaque, void *opaque)
{
	for (int i = 0; i < MAX_TIMERS; i++) {
		if (!timers[i].used) {
			timers[i] = (struct timer){ true, id, cb_opaque, -1 };
			return &timers[i];
		}
	}
	sbx_err("net: slirp wants more than %d timers", MAX_TIMERS);
	exit(1);
}

static void cb_timer_free(void *t, void *opaque)
{
	((struct timer *)t)->used = false;
}

static void cb_timer_mod(void *t, int64_t expire_ms, void *opaque)
{
	((struct timer *)t)->expire_ms = expire_ms;
}

static void cb_noop_fd(int fd, void *opaque)
{
}

static void cb_notify(void *opaque)
{
}

static int cb_add_poll(int fd, int events, void *opaque)
{
	if (npfd == MAX_POLL) {
		sbx_err("net: more than %d sockets", MAX_POLL);
		exit(1);
	}
	short ev = 0;
	ev |= (events & SLIRP_POLL_IN) ? POLLIN : 0;
	ev |= (events & SLIRP_POLL_OUT) ? POLLOUT : 0;
	ev |= (events & SLIRP_POLL_PRI) ? POLLPRI : 0;
	pfd[npfd] = (struct pollfd){ .fd = fd, .events = ev };
	return npfd++;
}

static int cb_get_revents(int idx, void *opaque)
{
	short r = pfd[idx].revents;
	int s = ((r & POLLIN) ? SLIRP_POLL_IN : 0) | ((r & POLLOUT) ? SLIRP_POLL_OUT : 0) |
		((r & POLLPRI) ? SLIRP_POLL_PRI : 0) | ((r & POLLERR) ? SLIRP_POLL_ERR : 0) |
		((r & POLLHUP) ? SLIRP_POLL_HUP : 0);
	return net_publish_revents(pfd[idx].fd, s, round_ms);
}

static const SlirpCb callbacks = {
	.send_packet = cb_send,
	.guest_error = cb_guest_error,
	.clock_get_ns = cb_clock,
	.timer_free = cb_timer_free,
	.timer_mod = cb_timer_mod,
	.register_poll_fd = cb_noop_fd,
	.unregister_poll_fd = cb_noop_fd,
	.notify = cb_notify,
	.timer_new_opaque = cb_timer_new_opaque,
};

static struct in_addr in4(uint32_t host_order)
{
	return (struct in_addr){ .s_addr = htonl(host_order) };
}

static Slirp *new_slirp(void)
{
	SlirpConfig c = {
		.version = 4,
		.restricted = 0,
		.in_enabled = true,
		.vnetwork = in4(NET_ADDR_NETWORK),
		.vnetmask = in4(0xffffffffu << (32 - NET_ADDR_PREFIX)),
		.vhost = in4(NET_ADDR_GATEWAY),
		.in6_enabled = false,
		.vdhcp_start = in4(NET_ADDR_GUEST),
		.vnameserver = in4(NET_ADDR_DNS),
		.if_mtu = NET_MTU,
		.if_mru = NET_MTU,
		.disable_host_loopback = false, /* the gateway reaches host loopback: net_policy allows host_ports only */
		.enable_emu = false,
		.disable_dns = true,
		.disable_dhcp = true,
	};
	return slirp_new(&c, &callbacks, &H);
}

static void usage_exit(const char *msg, const char *arg)
{
	fprintf(stderr, "sandbox-net-helper: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
	exit(2);
}

static void parse_args(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (i + 1 >= argc)
			usage_exit("missing value", a);
		const char *v = argv[++i];
		sbx_error_t err = NULL;
		int rc = net_publish_arg(a, v);
		if (rc < 0)
			usage_exit("bad value", a);
		if (rc > 0)
			continue;
		if (strcmp(a, "--sandbox") == 0) {
			H.sandbox = v;
		} else if (strcmp(a, "--dns-servers") == 0) {
			H.dns_servers = v;
		} else if (strcmp(a, "--host-port") == 0) {
			char *end;
			long p = strtol(v, &end, 10);
			if (*end != '\0' || p < 1 || p > 65535 || H.policy.n_host_ports == NET_MAX_HOST_PORTS)
				usage_exit("bad --host-port", v);
			H.policy.host_ports[H.policy.n_host_ports++] = (uint16_t)p;
		} else if (strcmp(a, "--allow") == 0) {
			rc = net_rules_add(&H.policy.allow, v, &err);
		} else if (strcmp(a, "--deny") == 0) {
			rc = net_rules_add(&H.policy.deny, v, &err);
		} else if (strcmp(a, "--sandbox-allow") == 0) {
			rc = net_rules_add(&H.policy.sb_allow, v, &err);
		} else if (strcmp(a, "--sandbox-deny") == 0) {
			rc = net_rules_add(&H.policy.sb_deny, v, &err);
		} else {
			usage_exit("unknown option", a);
		}
		if (rc < 0)
			usage_exit(sbx_error_msg(err), a);
	}
	if (H.sandbox == NULL)
		usage_exit("--sandbox is required", NULL);
}

static void read_frames(void)
{
	static uint8_t buf[FRAME_MAX];
	for (int i = 0; i < FRAMES_PER_ROUND; i++) {
		ssize_t n = recv(H.frames_fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				sbx_debug_limited("net: recv: %s", strerror(errno));
			return;
		}
		net_guard_input(&H, buf, (size_t)n);
	}
}

static int64_t next_timer(int64_t now)
{
	int64_t wait = 1000;
	for (int i = 0; i < MAX_TIMERS; i++) {
		if (timers[i].used && timers[i].expire_ms >= 0 && timers[i].expire_ms - now < wait)
			wait = timers[i].expire_ms - now;
	}
	return wait < 0 ? 0 : wait;
}

static void run_timers(int64_t now)
{
	for (int i = 0; i < MAX_TIMERS; i++) {
		if (timers[i].used && timers[i].expire_ms >= 0 && timers[i].expire_ms <= now) {
			timers[i].expire_ms = -1;
			slirp_handle_timer(H.slirp, timers[i].id, timers[i].cb_opaque);
		}
	}
}

static void loop(void)
{
	for (;;) {
		npfd = 0;
		cb_add_poll(H.frames_fd, SLIRP_POLL_IN | (H.txq_n > 0 ? SLIRP_POLL_OUT : 0), NULL);
		pfd[npfd++] = (struct pollfd){ .fd = NET_HELPER_FD_LIFELINE, .events = POLLIN };
		pfd[npfd++] = (struct pollfd){ .fd = NET_HELPER_FD_VM, .events = POLLIN };
		uint32_t timeout = (uint32_t)next_timer(sbx_now_ms());
		slirp_pollfds_fill(H.slirp, &timeout, cb_add_poll, NULL);
		int ares_from = npfd;
		ares_socket_t socks[ARES_GETSOCK_MAXNUM];
		/* c-ares's own bit macros shift a signed 1 into the sign bit */
		unsigned mask = H.have_ares ? (unsigned)ares_getsock(H.ares, socks, ARES_GETSOCK_MAXNUM) : 0;
		for (int i = 0; i < ARES_GETSOCK_MAXNUM && npfd < MAX_POLL; i++) {
			short ev = (short)(((mask & (1u << i)) ? POLLIN : 0) |
					   ((mask & (1u << (i + ARES_GETSOCK_MAXNUM))) ? POLLOUT : 0));
			if (ev != 0)
				pfd[npfd++] = (struct pollfd){ .fd = socks[i], .events = ev };
		}
		if (H.have_ares && H.dns_pending > 0) {
			struct timeval tv, *t = ares_timeout(H.ares, NULL, &tv);
			if (t != NULL && (uint32_t)(t->tv_sec * 1000 + t->tv_usec / 1000) < timeout)
				timeout = (uint32_t)(t->tv_sec * 1000 + t->tv_usec / 1000);
		}
		int rc = poll(pfd, (nfds_t)npfd, (int)timeout);
		if (rc < 0 && errno != EINTR) {
			sbx_err("net: poll: %s", strerror(errno));
			exit(1);
		}
		if (rc > 0 && (pfd[1].revents != 0 || pfd[2].revents != 0))
			return; /* the daemon or the VM is gone */
		if (rc > 0 && (pfd[0].revents & POLLOUT))
			net_txq_flush(&H);
		if (rc > 0 && (pfd[0].revents & POLLIN))
			read_frames();
		round_ms = sbx_now_ms();
		slirp_pollfds_poll(H.slirp, rc < 0, cb_get_revents, NULL);
		net_publish_after_poll(round_ms);
		if (H.have_ares) {
			bool any = false;
			for (int i = ares_from; rc > 0 && i < npfd; i++) {
				if (pfd[i].revents == 0)
					continue;
				any = true;
				ares_socket_t fd = pfd[i].fd;
				ares_process_fd(H.ares, (pfd[i].revents & (POLLIN | POLLERR | POLLHUP)) ? fd : ARES_SOCKET_BAD,
						(pfd[i].revents & POLLOUT) ? fd : ARES_SOCKET_BAD);
			}
			if (!any)
				ares_process_fd(H.ares, ARES_SOCKET_BAD, ARES_SOCKET_BAD); /* timeouts */
		}
		run_timers(sbx_now_ms());
		net_report_push(&H, NET_HELPER_FD_LIFELINE, false);
	}
}

/* The helper needs no privilege at all once started (its sockets are
 * ordinary connects, its descriptors inherited): root drops to nobody. */
static int drop_privileges(void)
{
	if (geteuid() != 0)
		return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 || setresuid(NOBODY, NOBODY, NOBODY) < 0)
		return -1;
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

int main(int argc, char **argv)
{
	sbx_log_init_from_env();
	/* The daemon that starts this helper has refused a bad value already. */
	sbx_error_t ferr = NULL;
	if (sbx_log_format_from_env(&ferr) < 0)
		sbx_error_free(&ferr);
	signal(SIGPIPE, SIG_IGN);
	parse_args(argc, argv);
	H.policy.gateway = NET_ADDR_GATEWAY;
	H.frames_fd = NET_HELPER_FD_FRAMES;
	H.beacon_fd = NET_HELPER_FD_BEACON;
	H.beacon_at_ms = -1000000;
	int big = 4 << 20;
	setsockopt(H.frames_fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	setsockopt(H.frames_fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	if ((H.pins = calloc(1, sizeof(*H.pins))) == NULL || (H.slirp = new_slirp()) == NULL) {
		sbx_err("net: cannot start the network stack");
		return 1;
	}
	sbx_error_t err = NULL;
	if (net_publish_setup(H.slirp, H.sandbox, &err) < 0) {
		sbx_err("net: sandbox %s: %s", H.sandbox, sbx_error_msg(err));
		return 1;
	}
	/* fail closed: unknown, the host's addresses would pass as any other */
	if (net_host_addrs_refresh(&H, &err) < 0) {
		sbx_err("net: sandbox %s: %s", H.sandbox, sbx_error_msg(err));
		return 1;
	}
	if (H.dns_servers == NULL || H.dns_servers[0] != '\0') {
		if (net_resolver_init(&H, &err) < 0) {
			sbx_err("net: sandbox %s: %s", H.sandbox, sbx_error_msg(err));
			return 2;
		}
	}
	if (drop_privileges() < 0) {
		sbx_err("net: sandbox %s: dropping privileges: %s", H.sandbox, strerror(errno));
		return 1;
	}
	const char *failed;
	int rc = net_seccomp_install(&failed);
	if (rc < 0) {
		sbx_err("net: sandbox %s: seccomp filter (%s): %s", H.sandbox, failed, strerror(-rc));
		return 1;
	}
	loop();
	/* The daemon adds it to its metric once this process is gone. */
	net_report_push(&H, NET_HELPER_FD_LIFELINE, true);
	if (H.denials > 0)
		sbx_warn("net: sandbox %s: %llu connection(s) or queries denied by the network policy", H.sandbox,
			 (unsigned long long)H.denials);
	uint64_t accepted, refused;
	net_publish_totals(&accepted, &refused);
	if (accepted + refused > 0)
		sbx_info("net: sandbox %s: published ports: %llu connection(s) accepted, %llu refused", H.sandbox,
			 (unsigned long long)accepted, (unsigned long long)refused);
	net_resolver_free(&H);
	slirp_cleanup(H.slirp);
	net_txq_free(&H);
	net_policy_free(&H.policy);
	free(H.pins);
	return 0;
}
