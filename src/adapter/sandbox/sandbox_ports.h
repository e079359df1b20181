/* create's `ports` (docs/networking.md, "Publishing a guest's port"): at
 * most NET_MAX_PUBLISH guest TCP ports, each published on the configured
 * publish_address at a host port the daemon binds before the VM boots, so
 * that a port outside publish_port_range or taken fails the create with
 * S400 and nothing is created.  The listening sockets go to the sandbox's
 * network helper, which accepts and forwards into the guest; without
 * `network` that helper denies the guest every connection of its own. */
#ifndef SBX_ADAPTER_SANDBOX_PORTS_H
#define SBX_ADAPTER_SANDBOX_PORTS_H

#include <jansson.h>
#include <stdint.h>

#include "adapter/config/config_publish.h"
#include "common/error.h"
#include "proto/proto_net_addr.h"

struct sandbox_port {
	uint16_t guest;
	uint16_t host; /* asked for (0: the kernel's choice), then bound */
	int fd;        /* the listener, -1 until bound */
};

struct sandbox_ports {
	struct sandbox_port v[NET_MAX_PUBLISH];
	size_t n;
};

/* Decodes `ports` (absent or null: none): an array of at most
 * NET_MAX_PUBLISH entries, each a port number or {guest, host?}; S001
 * naming the entry otherwise. */
int sandbox_ports_decode(json_t *req, struct sandbox_ports *p, sbx_error_t *err);
/* The ports of a new sandbox made from a recorded one (a fork, a sandbox
 * from a snapshot: issue 41 item 4): the record's guest ports (its
 * [{guest, address, host}], as list shows it), each to be published at a
 * host port of its own, never the record's.  -1 (S001) for a bad record. */
int sandbox_ports_fresh(json_t *recorded, struct sandbox_ports *p, sbx_error_t *err);
/* Binds and listens on every port; S400 naming a host port outside the
 * range or one that cannot be bound (all closed again on failure). */
int sandbox_ports_bind(const struct sbx_publish_config *cfg, struct sandbox_ports *p, sbx_error_t *err);
void sandbox_ports_close(struct sandbox_ports *p);
/* [{guest, address, host}] for the create reply and list (NULL: out of memory). */
json_t *sandbox_ports_json(const struct sbx_publish_config *cfg, const struct sandbox_ports *p);
/* The helper's options for the ports, appended to args (a NULL-terminated
 * array from net_config_helper_args, or NULL for a sandbox without
 * `network`: then options that deny the guest everything of its own).
 * Returns the new array (args consumed), NULL when out of memory. */
char **sandbox_ports_helper_args(const struct sbx_publish_config *cfg, const struct sandbox_ports *p, char **args,
				 const char *sandbox_id);

#endif
