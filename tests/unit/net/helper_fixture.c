/* A network helper without a VM or libslirp (see helper_fixture.h). */
#include "helper_fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto/proto_net_addr.h"

static struct net_helper H;
static struct net_pins pins;
static int guest_fd = -1;
static unsigned slirp_count;
static uint8_t slirp_last[65536];
static size_t slirp_last_len;

void slirp_input(Slirp *slirp, const uint8_t *pkt, int pkt_len)
{
	(void)slirp;
	if (pkt_len < 0 || (size_t)pkt_len > sizeof(slirp_last)) {
		fprintf(stderr, "helper_fixture: slirp_input got %d bytes\n", pkt_len);
		abort();
	}
	slirp_count++;
	memcpy(slirp_last, pkt, (size_t)pkt_len);
	slirp_last_len = (size_t)pkt_len;
}

static void die(const char *what)
{
	fprintf(stderr, "helper_fixture: %s: %s\n", what, strerror(errno));
	abort();
}

struct net_helper *hf_reset(void)
{
	net_txq_free(&H);
	net_resolver_free(&H);
	net_policy_free(&H.policy);
	if (H.frames_fd > 0)
		close(H.frames_fd);
	if (guest_fd >= 0)
		close(guest_fd);
	memset(&H, 0, sizeof(H));
	memset(&pins, 0, sizeof(pins));
	slirp_count = 0;
	slirp_last_len = 0;
	/* as the helper: a guest gone mid-send is an error, not a signal */
	signal(SIGPIPE, SIG_IGN);
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) < 0)
		die("socketpair");
	if (fcntl(sv[1], F_SETFL, O_NONBLOCK) < 0)
		die("fcntl");
	H.frames_fd = sv[0];
	guest_fd = sv[1];
	H.sandbox = "unit";
	H.beacon_fd = -1;
	H.beacon_at_ms = -1000000;
	H.pins = &pins;
	H.policy.gateway = NET_ADDR_GATEWAY;
	H.policy.host_ports[0] = HF_HOST_PORT;
	H.policy.n_host_ports = 1;
	sbx_error_t err = NULL;
	if (net_rules_add(&H.policy.allow, HF_ALLOWED_NET, &err) < 0 || net_rules_add(&H.policy.allow, "*.test", &err) < 0 ||
	    net_rules_add(&H.policy.deny, HF_DENIED_NET, &err) < 0) {
		fprintf(stderr, "helper_fixture: %s\n", sbx_error_msg(err));
		abort();
	}
	return &H;
}

int hf_guest_fd(void)
{
	return guest_fd;
}

void hf_close_guest(void)
{
	if (guest_fd >= 0)
		close(guest_fd);
	guest_fd = -1;
}

size_t hf_to_guest(uint8_t *buf, size_t cap, struct net_frame *f)
{
	ssize_t n = recv(guest_fd, buf, cap, MSG_TRUNC);
	if (n < 0 && errno == EAGAIN)
		return 0;
	if (n < 0)
		die("recv");
	if ((size_t)n > cap) {
		fprintf(stderr, "helper_fixture: a frame of %zd bytes to the guest (room for %zu)\n", n, cap);
		abort();
	}
	if (net_frame_parse(buf, (size_t)n, f) < 0) {
		fprintf(stderr, "helper_fixture: a malformed frame of %zd bytes to the guest\n", n);
		abort();
	}
	return (size_t)n;
}

unsigned hf_slirp_count(void)
{
	return slirp_count;
}

const uint8_t *hf_slirp_last(size_t *len)
{
	*len = slirp_last_len;
	return slirp_last;
}
