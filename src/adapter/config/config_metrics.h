/* metrics_listen: where serve answers GET /metrics, if anywhere.  A
 * loopback host:port (127.0.0.0/8, localhost, [::1]) or the absolute path
 * of a unix socket in a directory that exists; any other address is a
 * configuration error, so metrics never reach another host by mistake. */
#ifndef SBX_ADAPTER_CONFIG_METRICS_H
#define SBX_ADAPTER_CONFIG_METRICS_H

#include <jansson.h>
#include <sys/socket.h>

#include "common/error.h"

enum sbx_metrics_listen_kind { SBX_METRICS_OFF, SBX_METRICS_TCP, SBX_METRICS_UNIX };

struct sbx_metrics_listen {
	enum sbx_metrics_listen_kind kind;
	char *text; /* as configured, for the log; NULL when off */
	struct sockaddr_storage addr; /* sockaddr_in, sockaddr_in6 or sockaddr_un */
	socklen_t addr_len;
};

int sbx_config_parse_metrics_listen(json_t *v, struct sbx_metrics_listen *out, sbx_error_t *err);
/* The same for an address given elsewhere (serve --front's environment);
 * `what` names it in errors. */
int sbx_metrics_listen_parse(const char *what, const char *text, struct sbx_metrics_listen *out, sbx_error_t *err);
void sbx_metrics_listen_free(struct sbx_metrics_listen *l);

#endif
