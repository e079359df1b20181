/* The published ports in the network helper (create's `ports`,
 * docs/networking.md "Publishing a guest's port").
 *
 * The daemon binds each port's listening socket and hands it over at
 * NET_HELPER_FD_PUBLISH + i; --publish GUEST (once per port, in that
 * order) names the guest port it forwards to.  libslirp forwards: each
 * port gets a slirp host forward to 10.0.2.15:GUEST whose own listener is
 * replaced (dup2) by the daemon's, so slirp accepts the callers'
 * connections itself and relays them through its bounded socket buffers.
 * This file gates those accepts: at most --publish-max connections a port
 * and NET_PUBLISH_SANDBOX_MAX on all ports together (the helper's memory
 * room, proto/proto_net_addr.h; --publish-sandbox-max lowers it) are open
 * at once (past either a caller's connection is accepted and reset at
 * once, counted and logged rate-limited), and a connection on which
 * nothing moved for NET_PUBLISH_IDLE_MS is shut down, so that a slow or
 * half-open caller holds one slot only that long. */
#ifndef SBX_NET_PUBLISH_H
#define SBX_NET_PUBLISH_H

#include <slirp/libslirp.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

#define NET_PUBLISH_IDLE_MS (120 * 1000)
/* Connections are tracked by descriptor number, below this (the jail's
 * RLIMIT_NOFILE); one above is shut down at once. */
#define NET_PUBLISH_FD_MAX 4096

/* Options: 1 when opt is --publish, --publish-max or --publish-sandbox-max
 * (val taken), 0 when it
 * is another option, -1 for a bad value. */
int net_publish_arg(const char *opt, const char *val);
/* Installs the forwards (before the helper drops privileges). */
int net_publish_setup(Slirp *slirp, const char *sandbox, sbx_error_t *err);
/* slirp's get_revents: filters the POLLIN of a published listener
 * (SLIRP_POLL_* bits in r) and notes activity on forwarded connections. */
int net_publish_revents(int fd, int r, int64_t now_ms);
/* After slirp_pollfds_poll: records the connection slirp accepted, and at
 * most once a second closes idle ones and counts closed ones. */
void net_publish_after_poll(int64_t now_ms);
/* Totals since the start: accepted and refused connections. */
void net_publish_totals(uint64_t *accepted, uint64_t *refused);

#endif
