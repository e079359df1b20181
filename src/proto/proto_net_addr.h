/* The guest network every networked sandbox sees (slirp's classic one):
 * the guest at 10.0.2.15/24, the gateway (the host, on listed ports only)
 * at 10.0.2.2, the helper's DNS server at 10.0.2.3.  Host byte order.
 * Below net/, vm/ and the guest: the network helper serves them, CONFIG
 * carries them, the guest's boot_net sets them. */
#ifndef SBX_PROTO_NET_ADDR_H
#define SBX_PROTO_NET_ADDR_H

#define NET_ADDR_NETWORK 0x0a000200u /* 10.0.2.0 */
#define NET_ADDR_PREFIX 24
#define NET_ADDR_GUEST 0x0a00020fu   /* 10.0.2.15 */
#define NET_ADDR_GATEWAY 0x0a000202u /* 10.0.2.2 */
#define NET_ADDR_DNS 0x0a000203u     /* 10.0.2.3 */
#define NET_ADDR_GATEWAY_TEXT "10.0.2.2"
/* Large frames: under emulation every frame costs, and nothing on this
 * virtual link fragments (slirp4netns uses the same). */
#define NET_MTU 65520

/* The helper process (sandbox-net-helper) finds these descriptors. */
#define NET_HELPER_FD_FRAMES 3   /* SOCK_DGRAM: one Ethernet frame per datagram, QEMU at the other end */
#define NET_HELPER_FD_LIFELINE 4 /* SOCK_SEQPACKET; EOF: the daemon is gone or stops the VM.  The helper's
				  * denial reports go the other way (net/net_report.h) */
#define NET_HELPER_FD_VM 5       /* pidfd of the VM's keeper: readable once the VM is gone */
#define NET_HELPER_FD_BEACON 6   /* its mtime is stamped when payload is relayed */
/* 7 and up: the listening TCP sockets of the sandbox's published ports
 * (create's `ports`), bound by the daemon, in the helper's --publish
 * order; at most NET_MAX_PUBLISH. */
#define NET_HELPER_FD_PUBLISH 7
#define NET_MAX_PUBLISH 16
/* The helper keeps the published ports' connection totals since its start
 * in the beacon's bytes at this offset: two uint64_t, accepted then refused. */
#define NET_BEACON_PUBLISH_AT 4096

/* The helper's memory cgroup (vm/net_link_jail.c), and the sandbox-wide
 * bound on its published ports' open connections derived from it: what
 * is left past NET_HELPER_BASE_MIB (the helper itself, measured 3-4 MiB,
 * and its guest's own connections) divided by what one connection can
 * hold at worst: libslirp's two socket buffers of 128 KiB and the
 * caller's socket's kernel buffers, 64 KiB a direction, which the cgroup
 * charges too (256 callers stalled mid-download took 13 MiB, but a caller
 * that sends while the guest does not read fills them), so that callers
 * who fill every connection of every port cannot get the helper
 * OOM-killed: 128 connections.
 * In the ASan build a connection costs about 1 MiB and freed memory stays
 * in ASan's quarantine (256 MiB by default): 256 idle connections took
 * 260 MiB. */
#ifdef __SANITIZE_ADDRESS__
#define NET_HELPER_JAIL_MIB 1024
#define NET_HELPER_BASE_MIB 320
#define NET_PUBLISH_CONN_KIB 2048
#else
#define NET_HELPER_JAIL_MIB 64
#define NET_HELPER_BASE_MIB 16
#define NET_PUBLISH_CONN_KIB 384
#endif
#define NET_PUBLISH_SANDBOX_MAX ((NET_HELPER_JAIL_MIB - NET_HELPER_BASE_MIB) * 1024 / NET_PUBLISH_CONN_KIB)

#endif
