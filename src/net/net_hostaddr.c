/* The host's own addresses (see net_hostaddr.h). */
#include "net/net_hostaddr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>

static void free_ifaddrs(struct ifaddrs **p)
{
	if (*p != NULL)
		freeifaddrs(*p);
}

static bool seen(const uint32_t *v, size_t n, uint32_t a)
{
	for (size_t i = 0; i < n; i++) {
		if (v[i] == a)
			return true;
	}
	return false;
}

int net_host_addrs_read(uint32_t **addrs, size_t *n, sbx_error_t *err)
{
	__attribute__((cleanup(free_ifaddrs))) struct ifaddrs *list = NULL;
	if (getifaddrs(&list) < 0)
		return sbx_error_errno(err, errno, "reading the host's addresses (getifaddrs)");
	size_t count = 0;
	for (struct ifaddrs *i = list; i != NULL; i = i->ifa_next)
		count++;
	uint32_t *v = calloc(count + 1, sizeof(*v));
	if (v == NULL)
		return sbx_error_errno(err, ENOMEM, "the host's addresses");
	size_t k = 0;
	for (struct ifaddrs *i = list; i != NULL; i = i->ifa_next) {
		if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET)
			continue;
		uint32_t a = ntohl(((const struct sockaddr_in *)(const void *)i->ifa_addr)->sin_addr.s_addr);
		if (!seen(v, k, a))
			v[k++] = a;
	}
	*addrs = v;
	*n = k;
	return 0;
}
