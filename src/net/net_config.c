/* network_policy parsing and the helper's command line (see net_config.h). */
#include "net/net_config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/nearest.h"
#include "common/scodes.h"

#define MAX_DNS_SERVERS 8

unsigned net_loopback_port(const char *url)
{
	unsigned port;
	const char *rest;
	if (strncmp(url, "ws://", 5) == 0) {
		rest = url + 5;
		port = 80;
	} else if (strncmp(url, "wss://", 6) == 0) {
		rest = url + 6;
		port = 443;
	} else {
		return 0;
	}
	char host[256];
	size_t n;
	const char *after;
	if (rest[0] == '[') {
		const char *close = strchr(rest, ']');
		if (close == NULL)
			return 0;
		n = (size_t)(close - rest - 1);
		if (n >= sizeof(host))
			return 0;
		memcpy(host, rest + 1, n);
		after = close + 1;
	} else {
		n = strcspn(rest, ":/?#");
		if (n >= sizeof(host))
			return 0;
		memcpy(host, rest, n);
		after = rest + n;
	}
	host[n] = '\0';
	struct in_addr a4;
	bool loop = strcmp(host, "localhost") == 0 || strcmp(host, "::1") == 0 ||
		    (inet_pton(AF_INET, host, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127);
	if (!loop)
		return 0;
	if (*after == ':') {
		char *end;
		unsigned long p = strtoul(after + 1, &end, 10);
		if (end == after + 1 || p == 0 || p > 65535 || (*end != '\0' && *end != '/' && *end != '?'))
			return 0;
		port = (unsigned)p;
	}
	return port;
}

unsigned net_config_engine_reachable(const struct net_config *c, const char *url)
{
	unsigned port = net_loopback_port(url);
	for (size_t i = 0; port != 0 && i < c->policy.n_host_ports; i++) {
		if (c->policy.host_ports[i] == port)
			return port;
	}
	return 0;
}

void net_config_init(struct net_config *c)
{
	memset(c, 0, sizeof(*c));
	const char *url = getenv("III_URL");
	if (url == NULL || url[0] == '\0')
		url = getenv("III_ENGINE_URL");
	if (url == NULL || url[0] == '\0')
		url = "ws://127.0.0.1:49134";
	unsigned port = net_loopback_port(url);
	if (port != 0)
		c->policy.host_ports[c->policy.n_host_ports++] = (uint16_t)port;
}

void net_config_free(struct net_config *c)
{
	net_policy_free(&c->policy);
	free(c->dns_servers);
	c->dns_servers = NULL;
}

static int parse_rules(json_t *v, const char *key, struct net_rules *rs, sbx_error_t *err)
{
	if (!json_is_array(v))
		return sbx_error_set(err, EINVAL, "expected a list of rules for `%s`", key);
	size_t i;
	json_t *item;
	json_array_foreach(v, i, item) {
		if (!json_is_string(item))
			return sbx_error_set(err, EINVAL, "`%s[%zu]`: expected a string", key, i);
		if (net_rules_add(rs, json_string_value(item), err) < 0)
			return sbx_error_prefix(err, "`%s[%zu]`", key, i);
	}
	return 0;
}

static int parse_host_ports(json_t *v, struct net_policy *p, sbx_error_t *err)
{
	if (!json_is_array(v) || json_array_size(v) > NET_MAX_HOST_PORTS)
		return sbx_error_set(err, EINVAL, "`host_ports`: expected a list of at most %d ports", NET_MAX_HOST_PORTS);
	p->n_host_ports = 0;
	size_t i;
	json_t *item;
	json_array_foreach(v, i, item) {
		if (!json_is_integer(item) || json_integer_value(item) < 1 || json_integer_value(item) > 65535)
			return sbx_error_set(err, EINVAL, "`host_ports[%zu]`: expected a port 1..65535", i);
		p->host_ports[p->n_host_ports++] = (uint16_t)json_integer_value(item);
	}
	return 0;
}

/* "ip[:port]" -> "ip:port" for c-ares; names are refused (resolving the
 * resolver would need a resolver). */
static int dns_server(const char *s, char *out, size_t cap, sbx_error_t *err)
{
	char host[64];
	unsigned long port = 53;
	const char *colon = strrchr(s, ':');
	size_t n = colon != NULL ? (size_t)(colon - s) : strlen(s);
	if (n >= sizeof(host))
		return -1;
	memcpy(host, s, n);
	host[n] = '\0';
	if (colon != NULL) {
		char *end;
		port = strtoul(colon + 1, &end, 10);
		if (end == colon + 1 || *end != '\0' || port == 0 || port > 65535)
			return -1;
	}
	struct in_addr a;
	if (inet_pton(AF_INET, host, &a) != 1)
		return -1;
	int w = snprintf(out, cap, "%s:%lu", host, port);
	return w > 0 && (size_t)w < cap ? 0 : sbx_error_set(err, ENAMETOOLONG, "dns_servers");
}

static int parse_dns_servers(json_t *v, struct net_config *c, sbx_error_t *err)
{
	if (!json_is_array(v) || json_array_size(v) > MAX_DNS_SERVERS)
		return sbx_error_set(err, EINVAL, "`dns_servers`: expected a list of at most %d \"ip[:port]\"",
				     MAX_DNS_SERVERS);
	char csv[MAX_DNS_SERVERS * 32] = "";
	size_t i;
	json_t *item;
	json_array_foreach(v, i, item) {
		char one[32];
		if (!json_is_string(item) || dns_server(json_string_value(item), one, sizeof(one), err) < 0)
			return sbx_error_set(err, EINVAL, "`dns_servers[%zu]`: expected an IPv4 address with an optional :port",
					     i);
		if (i > 0)
			strcat(csv, ",");
		strcat(csv, one);
	}
	free(c->dns_servers);
	if ((c->dns_servers = strdup(csv)) == NULL)
		return sbx_error_errno(err, ENOMEM, "config");
	return 0;
}

static const char *const policy_fields[] = { "allow", "deny", "host_ports", "dns_servers" };

int net_config_parse(json_t *v, struct net_config *c, sbx_error_t *err)
{
	if (!json_is_object(v))
		return sbx_error_set(err, EINVAL, "config key `network_policy`: expected a map");
	const char *k;
	json_t *item;
	json_object_foreach(v, k, item) {
		int rc;
		const char *near;
		if (strcmp(k, policy_fields[0]) == 0)
			rc = parse_rules(item, k, &c->policy.allow, err);
		else if (strcmp(k, policy_fields[1]) == 0)
			rc = parse_rules(item, k, &c->policy.deny, err);
		else if (strcmp(k, policy_fields[2]) == 0)
			rc = parse_host_ports(item, &c->policy, err);
		else if (strcmp(k, policy_fields[3]) == 0)
			rc = parse_dns_servers(item, c, err);
		else if ((near = sbx_nearest(k, policy_fields, sizeof(policy_fields) / sizeof(policy_fields[0]))) != NULL)
			rc = sbx_error_set(err, EINVAL, "unknown key `%s` (did you mean `%s`?)", k, near);
		else
			rc = sbx_error_set(err, EINVAL, "unknown key `%s` (allow, deny, host_ports, dns_servers)", k);
		if (rc < 0)
			return sbx_error_prefix(err, "config key `network_policy`");
	}
	return 0;
}

int net_config_narrowing(const struct net_config *c, json_t *network, struct net_policy *narrow, sbx_error_t *err)
{
	memset(narrow, 0, sizeof(*narrow));
	const char *k;
	json_t *item;
	json_object_foreach(network, k, item) {
		struct net_rules *rs = strcmp(k, "allow") == 0 ? &narrow->sb_allow
				       : strcmp(k, "deny") == 0 ? &narrow->sb_deny
								: NULL;
		if (rs == NULL)
			return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "network: unknown key `%s` (allow, deny)", k);
		if (parse_rules(item, k, rs, err) < 0) {
			sbx_error_prefix(err, "network");
			sbx_error_default_scode(err, SBX_S_INVALID_REQUEST);
			return -1;
		}
	}
	for (size_t i = 0; i < narrow->sb_allow.n; i++) {
		if (net_policy_check_narrowing(&c->policy, &narrow->sb_allow.v[i], err) < 0)
			return -1;
	}
	return 0;
}

void net_args_free(char **args)
{
	for (size_t i = 0; args != NULL && args[i] != NULL; i++)
		free(args[i]);
	free(args);
}

struct argv {
	char **v;
	size_t n, cap;
	bool failed;
};

static void push(struct argv *a, const char *opt, const char *val)
{
	if (a->failed)
		return;
	if (a->n + 3 > a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 32;
		char **v = realloc(a->v, cap * sizeof(char *));
		if (v == NULL) {
			a->failed = true;
			return;
		}
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n] = strdup(opt);
	a->v[a->n + 1] = strdup(val);
	a->v[a->n + 2] = NULL;
	if (a->v[a->n] == NULL || a->v[a->n + 1] == NULL)
		a->failed = true;
	a->n += 2;
}

static void push_rules(struct argv *a, const char *opt, const struct net_rules *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		push(a, opt, rs->v[i].text);
}

char **net_config_helper_args(const struct net_config *c, const struct net_policy *narrow, const char *sandbox_id,
			      sbx_error_t *err)
{
	struct argv a = { 0 };
	push(&a, "--sandbox", sandbox_id);
	for (size_t i = 0; i < c->policy.n_host_ports; i++) {
		char port[8];
		snprintf(port, sizeof(port), "%u", c->policy.host_ports[i]);
		push(&a, "--host-port", port);
	}
	push_rules(&a, "--allow", &c->policy.allow);
	push_rules(&a, "--deny", &c->policy.deny);
	if (narrow != NULL) {
		push_rules(&a, "--sandbox-allow", &narrow->sb_allow);
		push_rules(&a, "--sandbox-deny", &narrow->sb_deny);
	}
	if (c->dns_servers != NULL)
		push(&a, "--dns-servers", c->dns_servers);
	if (a.failed) {
		net_args_free(a.v);
		sbx_error_errno(err, ENOMEM, "network helper arguments");
		return NULL;
	}
	return a.v;
}
