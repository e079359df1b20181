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

#endif
