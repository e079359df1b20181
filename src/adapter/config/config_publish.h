/* The published ports' keys (create's `ports`, docs/networking.md):
 *
 *   publish_address: "127.0.0.1"         the host address every published
 *                                        port listens on (an IPv4 address
 *                                        of the host, or 0.0.0.0)
 *   publish_port_range: [32768, 60999]   where a caller's `host` may be
 *   publish_max_connections: 256         open connections per port */
#ifndef SBX_ADAPTER_CONFIG_PUBLISH_H
#define SBX_ADAPTER_CONFIG_PUBLISH_H

#include <jansson.h>
#include <stdint.h>

#include "common/error.h"

#define SBX_PUBLISH_ADDRESS_DEFAULT "127.0.0.1"
#define SBX_PUBLISH_PORT_LO_DEFAULT 32768
#define SBX_PUBLISH_PORT_HI_DEFAULT 60999
#define SBX_PUBLISH_MAX_CONNECTIONS_DEFAULT 256
/* The helper polls every connection: the bound keeps it within its
 * descriptors. */
#define SBX_PUBLISH_MAX_CONNECTIONS_MAX 1024

struct sbx_publish_config {
	char address[16];  /* dotted IPv4, as configured */
	uint32_t addr;     /* the same, network byte order */
	uint16_t port_lo, port_hi;
	uint32_t max_connections;
};

void sbx_publish_config_init(struct sbx_publish_config *p);
/* 1 when k is one of the keys above (parsed into p), 0 when it is not,
 * -1 for a bad value (the message names the key). */
int sbx_publish_config_parse_key(struct sbx_publish_config *p, const char *k, json_t *v, sbx_error_t *err);
/* The keys' names, i = 0.. until NULL. */
const char *sbx_publish_config_key(size_t i);
/* The keys as `config check` prints them, added to obj. */
int sbx_publish_config_print(const struct sbx_publish_config *p, json_t *obj);

#endif
