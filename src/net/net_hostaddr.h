/* The IPv4 addresses of the host's own interfaces: a guest reaching one of
 * them reaches the host, so the policy treats each as the gateway. */
#ifndef SBX_NET_HOSTADDR_H
#define SBX_NET_HOSTADDR_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* Every IPv4 address of every interface, up or not (host byte order, each
 * once), into a new array the caller frees.  getifaddrs asks the kernel
 * over netlink: no file under /proc or /sys, so it works in the helper's
 * jail, which keeps the host's network namespace. */
int net_host_addrs_read(uint32_t **addrs, size_t *n, sbx_error_t *err);

#endif
