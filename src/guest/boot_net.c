/* Interface, route and resolver set-up of PID 1 (see boot_net.h).  No
 * tools exist in the image that could be trusted for this: ioctls only. */
#include "guest/boot_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <net/route.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "proto/proto_net_addr.h"

#define NET_IF "eth0"

static void set_sin(struct sockaddr *sa, uint32_t host_order)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(host_order) };
	memcpy(sa, &sin, sizeof(sin));
}

static int link_up(int s, const char *ifname, sbx_error_t *err)
{
	struct ifreq ifr = { 0 };
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		return sbx_error_errno(err, errno, "%s: get flags", ifname);
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		return sbx_error_errno(err, errno, "%s: up", ifname);
	return 0;
}

/* Absent when the kernel has no IPv6: then there is nothing to turn off. */
static int write_sysctl(const char *path, const char *value, sbx_error_t *err)
{
	cleanup_close int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : sbx_error_errno(err, errno, "open %s", path);
	if (write(fd, value, strlen(value)) < 0)
		return sbx_error_errno(err, errno, "write %s", path);
	return 0;
}

static int write_resolv_conf(uint32_t dns, sbx_error_t *err)
{
	char text[64];
	int n = snprintf(text, sizeof(text), "nameserver %u.%u.%u.%u\n", dns >> 24, (dns >> 16) & 255,
			 (dns >> 8) & 255, dns & 255);
	/* A symlink (to a systemd stub, say) is replaced, not followed. */
	if (unlink("/etc/resolv.conf") < 0 && errno != ENOENT)
		return sbx_error_errno(err, errno, "remove /etc/resolv.conf");
	mkdir("/etc", 0755);
	cleanup_close int fd = open("/etc/resolv.conf", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return sbx_error_errno(err, errno, "create /etc/resolv.conf");
	if (write(fd, text, (size_t)n) != n)
		return sbx_error_errno(err, errno, "write /etc/resolv.conf");
	return 0;
}

static int configure_eth0(int s, const struct proto_config *c, sbx_error_t *err)
{
	if (write_sysctl("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1", err) < 0 ||
	    write_sysctl("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1", err) < 0 ||
	    write_sysctl("/proc/sys/net/ipv6/conf/" NET_IF "/disable_ipv6", "1", err) < 0)
		return -1;
	struct ifreq ifr = { 0 };
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", NET_IF);
	set_sin(&ifr.ifr_addr, c->net_addr);
	if (ioctl(s, SIOCSIFADDR, &ifr) < 0)
		return sbx_error_errno(err, errno, NET_IF ": set address (is there a virtio-net device?)");
	set_sin(&ifr.ifr_netmask, c->net_prefix == 0 ? 0 : 0xffffffffu << (32 - c->net_prefix));
	if (ioctl(s, SIOCSIFNETMASK, &ifr) < 0)
		return sbx_error_errno(err, errno, NET_IF ": set netmask");
	ifr.ifr_mtu = NET_MTU;
	if (ioctl(s, SIOCSIFMTU, &ifr) < 0)
		return sbx_error_errno(err, errno, NET_IF ": set MTU %d", NET_MTU);
	if (link_up(s, NET_IF, err) < 0)
		return -1;
	struct rtentry rt = { 0 };
	set_sin(&rt.rt_dst, 0);
	set_sin(&rt.rt_genmask, 0);
	set_sin(&rt.rt_gateway, c->net_gateway);
	rt.rt_flags = RTF_UP | RTF_GATEWAY;
	rt.rt_dev = (char *)NET_IF;
	if (ioctl(s, SIOCADDRT, &rt) < 0 && errno != EEXIST)
		return sbx_error_errno(err, errno, NET_IF ": default route");
	return write_resolv_conf(c->net_dns, err);
}

int boot_net_loopback(sbx_error_t *err)
{
	cleanup_close int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return sbx_error_errno(err, errno, "socket");
	return link_up(s, "lo", err);
}

int boot_net_configure(const struct proto_config *c, sbx_error_t *err)
{
	if (c->net_addr == 0)
		return 0;
	cleanup_close int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return sbx_error_errno(err, errno, "socket");
	return configure_eth0(s, c, err);
}
