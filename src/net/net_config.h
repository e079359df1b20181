/* The `network_policy` configuration key and the per-sandbox `network`
 * narrowing, turned into sandbox-net-helper options.
 *
 * network_policy: {allow: [rule], deny: [rule], host_ports: [port],
 *                  dns_servers: ["ip[:port]"]}
 * Defaults: no allow list (public addresses reachable), no deny rules,
 * host_ports = the engine's port when III_URL points at a loopback
 * address, dns_servers = the host's /etc/resolv.conf.  Rules: net_policy.h. */
#ifndef SBX_NET_CONFIG_H
#define SBX_NET_CONFIG_H

#include <jansson.h>

#include "common/error.h"
#include "net/net_policy.h"

struct net_config {
	struct net_policy policy; /* allow, deny, host_ports */
	char *dns_servers;        /* "ip:port,..."; NULL = the host's resolv.conf, "" = none */
};

/* Defaults (host_ports from III_URL, else III_ENGINE_URL, else the
 * daemon's default ws://127.0.0.1:49134). */
void net_config_init(struct net_config *c);
/* Parses the key's value over the defaults; a bad value names the field. */
int net_config_parse(json_t *v, struct net_config *c, sbx_error_t *err);
void net_config_free(struct net_config *c);

/* create's `network` when an object {allow, deny}: rules that narrow the
 * configured policy (S001 for a bad or widening one). */
int net_config_narrowing(const struct net_config *c, json_t *network, struct net_policy *narrow, sbx_error_t *err);

/* The helper's options (NULL-terminated; free with net_args_free). */
char **net_config_helper_args(const struct net_config *c, const struct net_policy *narrow, const char *sandbox_id,
			      sbx_error_t *err);
void net_args_free(char **args);

/* The engine port to open on the gateway by default, 0 when url is not a
 * loopback ws:// or wss:// URL. */
unsigned net_loopback_port(const char *url);

/* The engine's port when guests with a network can reach it: `url` is a
 * loopback engine URL and its port is in host_ports.  0 otherwise. */
unsigned net_config_engine_reachable(const struct net_config *c, const char *url);

#endif
