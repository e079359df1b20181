/* The guest's network: lo up before HELLO (a template carries it); at
 * CONFIG, with a network, eth0 gets its address, the default route goes
 * through the gateway, IPv6 is off (it would bypass the host's egress
 * policy) and /etc/resolv.conf, on the overlay, names the host's DNS
 * server. */
#ifndef SBX_GUEST_BOOT_NET_H
#define SBX_GUEST_BOOT_NET_H

#include "common/error.h"
#include "proto/proto_msg.h"

int boot_net_loopback(sbx_error_t *err);
int boot_net_configure(const struct proto_config *c, sbx_error_t *err);

#endif
