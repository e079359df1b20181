/* create's `ports` (see sandbox_ports.h). */
#include "adapter/sandbox/sandbox_ports.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "adapter/request.h"
#include "common/scodes.h"
#include "net/net_config.h"

/* Kernel buffers of each forwarded connection (accepted sockets inherit
 * them from the listener): with libslirp's own two 128 KiB buffers, what
 * one connection can hold in flight. */
#define PUBLISH_SOCKET_BUF (64 * 1024)

static int port_number(json_t *v, uint16_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 65535)
		return -1;
	*out = (uint16_t)json_integer_value(v);
	return 0;
}

static int decode_entry(json_t *e, size_t i, struct sandbox_port *p, sbx_error_t *err)
{
	*p = (struct sandbox_port){ .fd = -1 };
	if (json_is_integer(e)) {
		if (port_number(e, &p->guest) < 0)
			return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "ports[%zu]: a guest port is 1-65535, got %lld",
					       i, (long long)json_integer_value(e));
		return 0;
	}
	if (!json_is_object(e))
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST,
				       "ports[%zu]: expected a guest port (8000) or {\"guest\": 8000, \"host\": 0}", i);
	const char *k;
	json_t *v;
	json_object_foreach(e, k, v) {
		if (strcmp(k, "guest") != 0 && strcmp(k, "host") != 0)
			return sbx_error_scode(err, SBX_S_INVALID_REQUEST,
					       "ports[%zu]: unknown field `%.64s` (fields: guest, host)", i, k);
	}
	if (port_number(json_object_get(e, "guest"), &p->guest) < 0)
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "ports[%zu].guest: expected a port 1-65535", i);
	json_t *h = json_object_get(e, "host");
	if (h != NULL && !json_is_null(h) && !(json_is_integer(h) && json_integer_value(h) == 0) &&
	    port_number(h, &p->host) < 0)
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST,
				       "ports[%zu].host: expected a port 1-65535, or 0 for one the host picks", i);
	return 0;
}

int sandbox_ports_decode(json_t *req, struct sandbox_ports *p, sbx_error_t *err)
{
	p->n = 0;
	json_t *v = json_object_get(req, "ports");
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return req_type_error(v, "ports", "an array of guest ports", err);
	if (json_array_size(v) > NET_MAX_PUBLISH)
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "ports: %zu entries, at most %d",
				       json_array_size(v), NET_MAX_PUBLISH);
	size_t i;
	json_t *e;
	json_array_foreach(v, i, e) {
		if (decode_entry(e, i, &p->v[i], err) < 0)
			return -1;
	}
	p->n = json_array_size(v);
	return 0;
}

int sandbox_ports_fresh(json_t *recorded, struct sandbox_ports *p, sbx_error_t *err)
{
	p->n = 0;
	if (recorded == NULL || json_is_null(recorded))
		return 0;
	if (!json_is_array(recorded) || json_array_size(recorded) > NET_MAX_PUBLISH)
		return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "recorded ports: expected at most %d entries",
				       NET_MAX_PUBLISH);
	size_t i;
	json_t *e;
	json_array_foreach(recorded, i, e) {
		p->v[i] = (struct sandbox_port){ .fd = -1 };
		if (port_number(json_object_get(e, "guest"), &p->v[i].guest) < 0)
			return sbx_error_scode(err, SBX_S_INVALID_REQUEST, "recorded ports[%zu]: no guest port", i);
	}
	p->n = json_array_size(recorded);
	return 0;
}

void sandbox_ports_close(struct sandbox_ports *p)
{
	for (size_t i = 0; i < p->n; i++) {
		if (p->v[i].fd >= 0)
			close(p->v[i].fd);
		p->v[i].fd = -1;
	}
}

static int bind_one(const struct sbx_publish_config *cfg, struct sandbox_port *p, sbx_error_t *err)
{
	if (p->host != 0 && (p->host < cfg->port_lo || p->host > cfg->port_hi))
		return sbx_error_scode(err, SBX_S_LIMIT,
				       "ports: host port %u is outside publish_port_range [%u, %u]; leave `host` out "
				       "for one the host picks",
				       p->host, cfg->port_lo, cfg->port_hi);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return sbx_error_errno(err, errno, "published port socket");
	int one = 1, buf = PUBLISH_SOCKET_BUF;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(p->host), .sin_addr.s_addr = cfg->addr };
	socklen_t len = sizeof(sa);
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf)) < 0) {
		int e = errno;
		close(fd);
		return sbx_error_errno(err, e, "published port socket options");
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, SOMAXCONN) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
		int e = errno;
		close(fd);
		if (p->host != 0)
			return sbx_error_scode(err, SBX_S_LIMIT, "ports: host port %u on %s cannot be published: %s",
					       p->host, cfg->address, strerror(e));
		return sbx_error_scode(err, SBX_S_LIMIT, "ports: no host port on %s for guest port %u: %s",
				       cfg->address, p->guest, strerror(e));
	}
	p->fd = fd;
	p->host = ntohs(sa.sin_port);
	return 0;
}

int sandbox_ports_bind(const struct sbx_publish_config *cfg, struct sandbox_ports *p, sbx_error_t *err)
{
	for (size_t i = 0; i < p->n; i++) {
		if (bind_one(cfg, &p->v[i], err) < 0) {
			sandbox_ports_close(p);
			return -1;
		}
	}
	return 0;
}

json_t *sandbox_ports_json(const struct sbx_publish_config *cfg, const struct sandbox_ports *p)
{
	json_t *a = json_array();
	for (size_t i = 0; a != NULL && i < p->n; i++) {
		if (json_array_append_new(a, json_pack("{s:I, s:s, s:I}", "guest", (json_int_t)p->v[i].guest, "address",
						       cfg->address, "host", (json_int_t)p->v[i].host)) < 0) {
			json_decref(a);
			a = NULL;
		}
	}
	return a;
}

/* Appends the option a and its value b; -1 when out of memory (*args
 * stays the caller's to free). */
static int push(char ***args, size_t *n, const char *a, const char *b)
{
	char **v = realloc(*args, (*n + 3) * sizeof(char *));
	if (v == NULL)
		return -1;
	*args = v;
	v[*n] = NULL;
	if ((v[*n] = strdup(a)) == NULL)
		return -1;
	if ((v[*n + 1] = strdup(b)) == NULL) {
		free(v[*n]);
		v[*n] = NULL;
		return -1;
	}
	v[*n + 2] = NULL;
	*n += 2;
	return 0;
}

char **sandbox_ports_helper_args(const struct sbx_publish_config *cfg, const struct sandbox_ports *p, char **args,
				 const char *sandbox_id)
{
	size_t n = 0;
	bool deny_all = args == NULL;
	if (deny_all && (args = calloc(1, sizeof(char *))) == NULL)
		return NULL;
	while (args[n] != NULL)
		n++;
	char num[16];
	/* Ingress only: no destination, no host port, no resolver. */
	if (deny_all && (push(&args, &n, "--sandbox", sandbox_id) < 0 || push(&args, &n, "--deny", "0.0.0.0/0") < 0 ||
			 push(&args, &n, "--dns-servers", "") < 0))
		goto fail;
	snprintf(num, sizeof(num), "%u", cfg->max_connections);
	if (push(&args, &n, "--publish-max", num) < 0)
		goto fail;
	for (size_t i = 0; i < p->n; i++) {
		snprintf(num, sizeof(num), "%u", p->v[i].guest);
		if (push(&args, &n, "--publish", num) < 0)
			goto fail;
	}
	return args;
fail:
	net_args_free(args);
	return NULL;
}
