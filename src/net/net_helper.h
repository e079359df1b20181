/* The network helper process: one per networked VM, single-threaded
 * (libslirp is not thread-safe).  Its parts share this state. */
#ifndef SBX_NET_HELPER_H
#define SBX_NET_HELPER_H

#include <ares.h>
#include <slirp/libslirp.h>
#include <stdbool.h>
#include <stdint.h>

#include "net/net_frame.h"
#include "net/net_policy.h"
#include "net/net_report.h"

#define NET_DENIAL_SLOTS 4096
/* An address added to the host reaches the gateway rule within this. */
#define NET_HOST_ADDRS_EVERY_MS 2000
/* Frames waiting for QEMU: an AF_UNIX datagram socket holds only
 * net.unix.max_dgram_qlen (10) of them, and a dropped frame costs TCP a
 * retransmission timeout. */
#define NET_TXQ_FRAMES 2048
#define NET_TXQ_BYTES (16u << 20)

struct net_txq_frame {
	uint8_t *buf;
	size_t len;
};

struct net_helper {
	const char *sandbox;       /* id in log lines */
	struct net_policy policy;
	struct net_pins *pins;
	Slirp *slirp;
	int frames_fd;
	struct net_txq_frame txq[NET_TXQ_FRAMES];
	size_t txq_head, txq_n, txq_bytes;
	int beacon_fd;
	int64_t beacon_at_ms;
	/* DNS */
	ares_channel ares;
	bool have_ares;
	const char *dns_servers;   /* "host:port,..." or NULL = the host's resolv.conf */
	unsigned dns_pending;
	int64_t host_addrs_at_ms; /* when the host's addresses were last read */
	/* denials: a (kind, destination, port) key logged once */
	uint64_t denial_seen[NET_DENIAL_SLOTS];
	bool denial_table_full;
	uint64_t denials;          /* the policy's (net_denial), for the line at exit */
	struct net_report report;  /* every denial by reason, for the daemon's metric */
	bool report_dirty;         /* report changed since it was last sent */
};

/* net_guard.c: a frame from the guest; passes it to slirp or answers it. */
void net_guard_input(struct net_helper *h, const uint8_t *buf, size_t len);
/* A frame to the guest (slirp's send_packet). */
void net_guard_output(struct net_helper *h, const uint8_t *buf, size_t len);
/* net_txq.c: sends a frame to the guest, or queues it while QEMU's socket is full
 * (dropped only when the queue is). */
void net_send_guest(struct net_helper *h, const uint8_t *buf, size_t len);
/* Sends queued frames until the socket is full again; true while some
 * remain (poll for POLLOUT). */
bool net_txq_flush(struct net_helper *h);
void net_txq_free(struct net_helper *h);
/* net_guard.c: records payload relayed now (the reaper's activity beacon). */
void net_beacon(struct net_helper *h);
/* Re-reads the host's addresses (policy.host_addrs) when the last read is
 * older than NET_HOST_ADDRS_EVERY_MS; a failed re-read keeps the old list. */
int net_host_addrs_refresh(struct net_helper *h, sbx_error_t *err);
/* net_denial.c: logs a denial of the policy once per key; counts every
 * one, in h->denials and by reason. */
void net_denial(struct net_helper *h, enum net_deny_reason reason, const char *what, uint64_t key, const char *why);
/* Counts a dropped frame by reason, unlogged (the guard's drops). */
void net_denial_count(struct net_helper *h, enum net_deny_reason reason);
/* net_report_send.c: sends h->report on fd (the lifeline, a SOCK_SEQPACKET
 * socket) when it changed and the daemon has read the last one sent (the
 * socket's SIOCOUTQ is 0), so at most one report waits there; final (at
 * exit) sends a changed report whatever waits.  Never blocks; a failed
 * send is retried on the next call. */
void net_report_push(struct net_helper *h, int fd, bool final);

/* net_resolver.c: the guest's DNS server.  At most this many queries wait
 * for the upstream servers; past it a query is answered SERVFAIL at once. */
#define NET_RESOLVER_MAX_PENDING 128
int net_resolver_init(struct net_helper *h, sbx_error_t *err);
void net_resolver_query(struct net_helper *h, const struct net_frame *f);
void net_resolver_free(struct net_helper *h);

#endif
